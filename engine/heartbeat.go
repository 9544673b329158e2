package engine

import (
	"fmt"
	"time"
)

// Flink's heartbeat between the JobManager (and the resource manager) and a
// TaskManager (HeartbeatManagerOptions). The JobManager sends a heartbeat
// request every heartbeat.interval (HeartbeatManagerSenderImpl); each
// heartbeat received resets a timer of heartbeat.timeout
// (DefaultHeartbeatMonitor, HeartbeatMonitorImpl before 2.0), and when it
// fires the TaskManager's tasks fail ("The heartbeat of TaskManager with id
// … timed out."). A request to a process that is gone fails at once
// (RecipientUnreachableException): after heartbeat.rpc-failure-threshold
// consecutive failed requests (FLINK-23209) the TaskManager is marked
// unreachable and its tasks fail before the timeout ("TaskManager with id …
// is no longer reachable."). Measured on Flink 2.3.0 and 1.20.5 with a
// TaskManager in a JVM of its own killed with SIGKILL (conformance
// taskmanager-killed-heartbeat): interval 200 ms, timeout 2 s, threshold 2:
// the tasks failed 240–397 ms after the kill; threshold -1: 1830–1954 ms.
const (
	// FlinkHeartbeatInterval is heartbeat.interval: 10 s.
	FlinkHeartbeatInterval = 10 * time.Second
	// FlinkHeartbeatRPCFailureThreshold is heartbeat.rpc-failure-threshold:
	// 2 consecutive failed heartbeat requests (-1 turns it off).
	FlinkHeartbeatRPCFailureThreshold = 2
)

// rpcFailureThreshold is the cluster's heartbeat.rpc-failure-threshold: 0
// in a spec means Flink's default; -1 (off) is returned as 0.
func (c ClusterSpec) rpcFailureThreshold() int {
	switch n := c.HeartbeatRPCFailureThreshold; {
	case n == 0:
		return FlinkHeartbeatRPCFailureThreshold
	case n < 0:
		return 0
	default:
		return n
	}
}

// heartbeatNotice is how long after a TaskManager crashed at job time at the
// JobManager notices, and why. Without cluster.heartbeatInterval (StateLab's
// simplified default) it is the heartbeat timeout, counted from the crash.
// With it, Flink's rule: heartbeat requests go out at every multiple of the
// interval (job time since the job started); the last one before the crash
// was answered, so the timeout runs from it; and the threshold-th request
// after the crash fails the threshold-th time in a row. The earlier decides.
func heartbeatNotice(c ClusterSpec, at time.Duration) (time.Duration, string) {
	timeout := c.HeartbeatTimeout.D()
	iv := c.HeartbeatInterval.D()
	if iv <= 0 {
		return timeout, "timeout"
	}
	last := at / iv * iv
	byTimeout := last + timeout - at
	if n := c.rpcFailureThreshold(); n > 0 {
		if byRPC := last + time.Duration(n)*iv - at; byRPC < byTimeout {
			return byRPC, "unreachable"
		}
	}
	return byTimeout, "timeout"
}

// heartbeatRule says, for the live view's story, how the JobManager notices
// a crashed TaskManager with this cluster's heartbeat settings.
func heartbeatRule(c ClusterSpec, after time.Duration, why string) string {
	if c.HeartbeatInterval.D() <= 0 {
		return fmt.Sprintf("the JobManager notices after the heartbeat timeout (%v here, simplified; Flink notices a killed process when %d heartbeat requests in a row fail, one every heartbeat.interval of %v, or after heartbeat.timeout %v where they do not fail, or sooner when a task reading from it over the network loses its connection)",
			c.HeartbeatTimeout.D(), FlinkHeartbeatRPCFailureThreshold, FlinkHeartbeatInterval, FlinkHeartbeatTimeout)
	}
	if why == "unreachable" {
		return fmt.Sprintf("the JobManager notices in %v, when its heartbeat requests (every %v) have failed %d times in a row (heartbeat.rpc-failure-threshold), before the heartbeat timeout (%v)",
			after, c.HeartbeatInterval.D(), c.rpcFailureThreshold(), c.HeartbeatTimeout.D())
	}
	return fmt.Sprintf("the JobManager notices in %v, when the heartbeat timeout (%v) runs out after the last heartbeat answered (requests every %v)",
		after, c.HeartbeatTimeout.D(), c.HeartbeatInterval.D())
}

// lostHow says how the JobManager found TaskManager id lost, for its
// subtasks' failure.
func lostHow(tms []*taskManager, id string) string {
	for _, tm := range tms {
		if tm.id == id && tm.notice == "unreachable" {
			return "no longer reachable"
		}
	}
	return "heartbeat timed out"
}
