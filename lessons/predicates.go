package lessons

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/rescale"
)

// The predicate catalogue (docs/lessons.md lists it for authors). Each
// predicate reads only the Observation; "this step" means between
// Observation.Start and Observation.Now.

// both pairs a predicate's English and Chinese descriptions.
func both(e, z func(a args) string) map[Lang]func(args) string {
	return map[Lang]func(args) string{EN: e, ZH: z}
}

// sinkArg names the sink a sink predicate judges; without it, the job's only sink.
var sinkArg = argSpec{name: "sink", kind: kString, ref: refSink}

// predicateTable registers the catalogue: one entry per predicate, its
// arguments, its description in each language, and the named functions
// that evaluate it and lint its arguments.
var predicateTable = []*predicate{
	{
		name: "job-status",
		args: []argSpec{{name: "status", kind: kString, required: true}},
		describe: both(func(a args) string { return fmt.Sprintf("The job is %s.", a.str("status")) },
			func(a args) string { return fmt.Sprintf("作业状态为 %s。", a.str("status")) }),
		eval: evalJobStatus,
		lint: lintJobStatus,
	},
	{
		name: "all-running",
		describe: both(func(args) string { return "The job is RUNNING and every subtask is RUNNING." },
			func(args) string { return "作业处于 RUNNING，所有子任务都在 RUNNING。" }),
		eval: evalAllRunning,
	},
	{
		name: "waiting-for-resources",
		describe: both(func(args) string {
			return "The job waits for resources: it needs more slots than the TaskManagers offer."
		}, func(args) string {
			return "作业正在等待资源：它需要的 slot 多于 TaskManager 提供的。"
		}),
		eval: evalWaitingForResources,
	},
	{
		name: "restarted",
		args: []argSpec{{name: "min", kind: kInt, required: true}},
		describe: both(func(a args) string {
			return fmt.Sprintf("The job restarted at least %s in this step.", plural(a.int("min"), "time"))
		},
			func(a args) string {
				return fmt.Sprintf("作业在这一步中至少重启了 %d 次。", a.int("min"))
			}),
		eval: evalRestarted,
	},
	{
		name: "redeployed-subtasks",
		args: []argSpec{{name: "n", kind: kInt, required: true}},
		describe: both(func(a args) string {
			return fmt.Sprintf("Exactly %s deployed again in this step; the others kept running.", plural(a.int("n"), "subtask")+" "+wasWere(a.int("n")))
		}, func(a args) string {
			return fmt.Sprintf("这一步中恰好有 %d 个子任务被重新部署，其余的子任务一直在运行。", a.int("n"))
		}),
		eval: evalRedeployedSubtasks,
	},
	{
		name: "restored-locally",
		args: []argSpec{{name: "local", kind: kBool, required: true}},
		describe: both(func(a args) string {
			if a.bool("local") {
				return "The job restored in this step, its keyed state read from the TaskManagers' local copies only."
			}
			return "The job restored in this step, its keyed state read from checkpoint storage only."
		}, func(a args) string {
			if a.bool("local") {
				return "作业在这一步中完成了恢复，键控状态全部读自 TaskManager 上的本地副本。"
			}
			return "作业在这一步中完成了恢复，键控状态全部读自检查点存储。"
		}),
		eval: evalRestoredLocally,
	},
	{
		name: "checkpoint-failed",
		args: []argSpec{{name: "min", kind: kInt, required: true}, {name: "reason", kind: kString}},
		describe: both(func(a args) string {
			s := fmt.Sprintf("At least %s failed in this step", plural(a.int("min"), "checkpoint"))
			if a.has("reason") {
				s += " with " + a.str("reason")
			}
			return s + "."
		}, func(a args) string {
			s := fmt.Sprintf("这一步中至少有 %d 个检查点失败", a.int("min"))
			if a.has("reason") {
				s += "，原因为 " + a.str("reason")
			}
			return s + "。"
		}),
		eval: evalCheckpointFailed,
		lint: lintCheckpointFailed,
	},
	{
		name: "parallelism",
		args: []argSpec{{name: "operator", kind: kString, required: true, ref: refOperator}, {name: "n", kind: kInt, required: true}},
		describe: both(func(a args) string { return fmt.Sprintf("%s runs %d subtasks.", a.str("operator"), a.int("n")) },
			func(a args) string {
				return fmt.Sprintf("%s 以 %d 个子任务运行。", a.str("operator"), a.int("n"))
			}),
		eval: evalParallelism,
	},
	{
		name: "max-parallelism",
		args: []argSpec{{name: "operator", kind: kString, required: true, ref: refOperator}, {name: "n", kind: kInt, required: true}},
		describe: both(func(a args) string {
			return fmt.Sprintf("%s has %d key groups (max parallelism %d).", a.str("operator"), a.int("n"), a.int("n"))
		}, func(a args) string {
			return fmt.Sprintf("%s 有 %d 个键组（最大并行度 %d）。", a.str("operator"), a.int("n"), a.int("n"))
		}),
		eval: evalMaxParallelism,
	},
	{
		name:  "taskmanagers",
		args:  []argSpec{{name: "alive", kind: kInt}, {name: "min", kind: kInt}},
		oneOf: []string{"alive", "min"},
		describe: both(func(a args) string {
			if a.has("alive") {
				return fmt.Sprintf("%d TaskManagers are alive.", a.int("alive"))
			}
			return fmt.Sprintf("At least %d TaskManagers are alive.", a.int("min"))
		}, func(a args) string {
			if a.has("alive") {
				return fmt.Sprintf("有 %d 个 TaskManager 存活。", a.int("alive"))
			}
			return fmt.Sprintf("至少有 %d 个 TaskManager 存活。", a.int("min"))
		}),
		eval: evalTaskmanagers,
	},
	{
		name: "taskmanager-lost",
		args: []argSpec{{name: "taskManager", kind: kString}},
		describe: both(func(a args) string {
			tm := "A TaskManager"
			if a.has("taskManager") {
				tm = "TaskManager " + a.str("taskManager")
			}
			return tm + " was lost in this step: its subtasks died and its local disk was wiped."
		}, func(a args) string {
			tm := "某个 TaskManager"
			if a.has("taskManager") {
				tm = "TaskManager " + a.str("taskManager")
			}
			return "这一步中，" + tm + " 丢失了：它上面的子任务都失败了，本地磁盘也被清空。"
		}),
		eval: evalTaskmanagerLost,
		lint: lintTaskmanagerLost,
	},
	{
		name:  "checkpointing",
		args:  []argSpec{{name: "periodic", kind: kBool}, {name: "mode", kind: kString}},
		oneOf: []string{"periodic", "mode"},
		describe: both(func(a args) string {
			var parts []string
			if a.has("periodic") {
				if a.bool("periodic") {
					parts = append(parts, "Checkpoints are taken periodically.")
				} else {
					parts = append(parts, "Periodic checkpoints are off.")
				}
			}
			if a.has("mode") {
				parts = append(parts, fmt.Sprintf("Checkpoints run in %s mode.", a.str("mode")))
			}
			return strings.Join(parts, " ")
		}, func(a args) string {
			var parts []string
			if a.has("periodic") {
				if a.bool("periodic") {
					parts = append(parts, "作业定期做检查点。")
				} else {
					parts = append(parts, "定期检查点已关闭。")
				}
			}
			if a.has("mode") {
				parts = append(parts, fmt.Sprintf("检查点以 %s 模式运行。", a.str("mode")))
			}
			return strings.Join(parts, "")
		}),
		eval: evalCheckpointing,
		lint: lintCheckpointing,
	},
	completedPredicate(false), // checkpoint-completed
	completedPredicate(true),  // savepoint-completed
	{
		name: "checkpoint-storage",
		args: []argSpec{{name: "kind", kind: kString, required: true}},
		describe: both(func(a args) string { return fmt.Sprintf("Checkpoints go to %s storage.", a.str("kind")) },
			func(a args) string { return fmt.Sprintf("检查点写入 %s 存储。", a.str("kind")) }),
		eval: evalCheckpointStorage,
		lint: lintCheckpointStorage,
	},
	{
		name: "checkpoint-incremental",
		args: []argSpec{{name: "min", kind: kInt, required: true}},
		describe: both(func(a args) string {
			return fmt.Sprintf("At least %s uploaded less than %s full state size.", plural(a.int("min"), "checkpoint"), itsTheir(a.int("min")))
		}, func(a args) string {
			return fmt.Sprintf("至少有 %d 个检查点上传的数据少于其全部状态大小。", a.int("min"))
		}),
		eval: evalCheckpointIncremental,
		lint: lintCheckpointIncremental,
	},
	{
		name: "shared-files",
		args: []argSpec{{name: "min", kind: kInt, required: true}},
		describe: both(func(a args) string {
			return fmt.Sprintf("The checkpoint directory holds at least %s.", plural(a.int("min"), "shared file"))
		}, func(a args) string {
			return fmt.Sprintf("检查点目录中至少有 %d 个共享文件。", a.int("min"))
		}),
		eval: evalSharedFiles,
	},
	{
		name: "retained-checkpoints",
		args: []argSpec{{name: "n", kind: kInt, required: true}},
		describe: both(func(a args) string { return fmt.Sprintf("Exactly %d completed checkpoints are retained.", a.int("n")) },
			func(a args) string { return fmt.Sprintf("恰好保留了 %d 个已完成的检查点。", a.int("n")) }),
		eval: evalRetainedCheckpoints,
	},
	{
		name: "channel-blocked",
		args: []argSpec{{name: "operator", kind: kString, required: true, ref: refOperator}},
		describe: both(func(a args) string {
			return fmt.Sprintf("A channel into %s was blocked for barrier alignment.", a.str("operator"))
		}, func(a args) string {
			return fmt.Sprintf("某个流入 %s 的通道因屏障对齐而被阻塞。", a.str("operator"))
		}),
		eval: evalChannelBlocked,
	},
	{
		name:  "restored-from",
		args:  []argSpec{{name: "operator", kind: kString, ref: refOperator}, {name: "checkpoint", kind: kCheckpoint}, {name: "savepoint", kind: kBool}},
		oneOf: []string{"checkpoint", "savepoint"},
		describe: both(func(a args) string {
			who := "Every subtask"
			if a.has("operator") {
				who = "Every subtask of " + a.str("operator")
			}
			switch {
			case a.bool("savepoint"):
				return who + " restored from a savepoint."
			case a.str("checkpoint") == "latest":
				return who + " restored from the latest checkpoint."
			case a.int("checkpoint") == 0:
				return who + " started with empty state."
			}
			return fmt.Sprintf("%s restored from checkpoint %d.", who, a.int("checkpoint"))
		}, func(a args) string {
			who := "每个子任务"
			if a.has("operator") {
				who = a.str("operator") + " 的每个子任务"
			}
			switch {
			case a.bool("savepoint"):
				return who + "都从保存点恢复。"
			case a.str("checkpoint") == "latest":
				return who + "都从最新的检查点恢复。"
			case a.int("checkpoint") == 0:
				return who + "都以空状态启动。"
			}
			return fmt.Sprintf("%s都从检查点 %d 恢复。", who, a.int("checkpoint"))
		}),
		eval: evalRestoredFrom,
	},
	{
		name: "restored-operator-state",
		args: []argSpec{{name: "operator", kind: kString, required: true, ref: refOperator}, {name: "state", kind: kString, required: true}, {name: "elements", kind: kInt, required: true}},
		describe: both(func(a args) string {
			return fmt.Sprintf("Each new subtask of %s restored exactly %s of its %s state.", a.str("operator"), plural(a.int("elements"), "element"), a.str("state"))
		}, func(a args) string {
			return fmt.Sprintf("%s 的每个新子任务都恰好恢复了 %s 状态中的 %d 个元素。", a.str("operator"), a.str("state"), a.int("elements"))
		}),
		eval: evalRestoredOperatorState,
	},
	{
		name: "source-partitions",
		args: []argSpec{{name: "operator", kind: kString, required: true, ref: refSource}, {name: "equals", kind: kTextMatrix, required: true}},
		describe: both(func(a args) string {
			return fmt.Sprintf("The offsets state of %s holds the partitions %s.", a.str("operator"), formatValue(a.texts("equals")))
		}, func(a args) string {
			return fmt.Sprintf("%s 的 offsets 状态中的分区为 %s。", a.str("operator"), formatValue(a.texts("equals")))
		}),
		eval: evalSourcePartitions,
	},
	{
		name: "operator-state",
		args: []argSpec{{name: "operator", kind: kString, required: true, ref: refOperator}, {name: "state", kind: kString, required: true}, {name: "equals", kind: kTextMatrix, required: true}},
		describe: both(func(a args) string {
			return fmt.Sprintf("The %s state of %s is %s.", a.str("state"), a.str("operator"), formatValue(a.texts("equals")))
		}, func(a args) string {
			return fmt.Sprintf("%s 的 %s 状态为 %s。", a.str("operator"), a.str("state"), formatValue(a.texts("equals")))
		}),
		eval: evalOperatorState,
	},
	{
		name: "source-read",
		args: []argSpec{{name: "operator", kind: kString, ref: refSource}, {name: "min", kind: kInt, required: true}},
		describe: both(func(a args) string { return fmt.Sprintf("The sources have read at least %d records.", a.int("min")) },
			func(a args) string { return fmt.Sprintf("source 至少已读取 %d 条记录。", a.int("min")) }),
		eval: evalSourceRead,
	},
	{
		name:  "keyed-state",
		args:  []argSpec{{name: "operator", kind: kString, required: true, ref: refKeyed}, {name: "key", kind: kScalar, required: true}, {name: "equals", kind: kScalar, required: true}, {name: "state", kind: kString}},
		state: true,
		describe: both(func(a args) string {
			return fmt.Sprintf("In %s, the key %s has the value %s.", a.str("operator"), a.str("key"), a.str("equals"))
		}, func(a args) string {
			return fmt.Sprintf("在 %s 中，键 %s 的值为 %s。", a.str("operator"), a.str("key"), a.str("equals"))
		}),
		eval: evalKeyedState,
	},
	{
		name:  "key-owner",
		args:  []argSpec{{name: "operator", kind: kString, required: true, ref: refKeyed}, {name: "key", kind: kScalar, required: true}, {name: "subtask", kind: kInt, required: true}},
		state: true,
		describe: both(func(a args) string {
			return fmt.Sprintf("The key %s is held by %s#%d, which owns its key group.", a.str("key"), a.str("operator"), a.int("subtask"))
		}, func(a args) string {
			return fmt.Sprintf("键 %s 由负责其键组的 %s#%d 保存。", a.str("key"), a.str("operator"), a.int("subtask"))
		}),
		eval: evalKeyOwner,
	},
	{
		name:  "keys-in-own-key-groups",
		args:  []argSpec{{name: "operator", kind: kString, required: true, ref: refKeyed}},
		state: true,
		describe: both(func(a args) string {
			return fmt.Sprintf("Every key of %s lies in a key group of its subtask's range.", a.str("operator"))
		}, func(a args) string {
			return fmt.Sprintf("%s 的每个键都落在其所在子任务的键组范围内。", a.str("operator"))
		}),
		eval: evalKeysInOwnKeyGroups,
	},
	{
		name: "key-group-ranges",
		args: []argSpec{{name: "operator", kind: kString, required: true, ref: refKeyed}, {name: "equals", kind: kIntMatrix, required: true}},
		describe: both(func(a args) string {
			return fmt.Sprintf("The key-group ranges of %s are %s.", a.str("operator"), formatValue(a.ints("equals")))
		}, func(a args) string {
			return fmt.Sprintf("%s 的键组范围是 %s。", a.str("operator"), formatValue(a.ints("equals")))
		}),
		eval: evalKeyGroupRanges,
		lint: lintKeyGroupRanges,
	},
	{
		name: "key-group-moved",
		args: []argSpec{{name: "operator", kind: kString, required: true, ref: refKeyed}, {name: "group", kind: kInt, required: true}, {name: "from", kind: kInt, required: true}, {name: "to", kind: kInt, required: true}},
		describe: both(func(a args) string {
			return fmt.Sprintf("Key group %d moved from %s#%d to %s#%d.", a.int("group"), a.str("operator"), a.int("from"), a.str("operator"), a.int("to"))
		}, func(a args) string {
			return fmt.Sprintf("键组 %d 从 %s#%d 移到了 %s#%d。", a.int("group"), a.str("operator"), a.int("from"), a.str("operator"), a.int("to"))
		}),
		eval: evalKeyGroupMoved,
	},
	{
		name: "key-groups-moved",
		args: []argSpec{{name: "operator", kind: kString, required: true, ref: refKeyed}, {name: "n", kind: kInt, required: true}},
		describe: both(func(a args) string {
			return fmt.Sprintf("Exactly %d key groups of %s changed subtask.", a.int("n"), a.str("operator"))
		}, func(a args) string {
			return fmt.Sprintf("%s 恰好有 %d 个键组换了子任务。", a.str("operator"), a.int("n"))
		}),
		eval: evalKeyGroupsMoved,
	},
	{
		name: "key-group-reads",
		args: []argSpec{{name: "operator", kind: kString, required: true, ref: refKeyed}, {name: "subtask", kind: kInt, required: true}, {name: "equals", kind: kIntMatrix, required: true}},
		describe: both(func(a args) string {
			var parts []string
			for _, r := range a.ints("equals") {
				if len(r) == 3 {
					parts = append(parts, fmt.Sprintf("[%d, %d] from old subtask %d", r[1], r[2], r[0]))
				}
			}
			return fmt.Sprintf("%s#%d restored key groups %s.", a.str("operator"), a.int("subtask"), strings.Join(parts, " and "))
		}, func(a args) string {
			var parts []string
			for _, r := range a.ints("equals") {
				if len(r) == 3 {
					parts = append(parts, fmt.Sprintf("从旧子任务 %d 读取键组 [%d, %d]", r[0], r[1], r[2]))
				}
			}
			return fmt.Sprintf("%s#%d 恢复时%s。", a.str("operator"), a.int("subtask"), strings.Join(parts, "，"))
		}),
		eval: evalKeyGroupReads,
		lint: lintKeyGroupReads,
	},
	{
		name: "backend-local-disk",
		args: []argSpec{{name: "operator", kind: kString, required: true, ref: refKeyed}, {name: "min", kind: kInt, required: true}},
		describe: both(func(a args) string {
			return fmt.Sprintf("Every subtask of %s has at least %s of state on its TaskManager's local disk.", a.str("operator"), plural(a.int("min"), "byte"))
		}, func(a args) string {
			return fmt.Sprintf("%s 的每个子任务在其 TaskManager 的本地磁盘上都至少有 %d 字节的状态。", a.str("operator"), a.int("min"))
		}),
		eval: evalBackendLocalDisk,
		lint: lintBackendLocalDisk,
	},
	{
		name: "restore-read",
		args: []argSpec{{name: "operator", kind: kString, required: true, ref: refKeyed}, {name: "min", kind: kInt, required: true}},
		describe: both(func(a args) string {
			return fmt.Sprintf("Every subtask of %s read at least %s of state from the checkpoint storage when it restored.", a.str("operator"), plural(a.int("min"), "byte"))
		}, func(a args) string {
			return fmt.Sprintf("%s 的每个子任务恢复时都从检查点存储中读取了至少 %d 字节的状态。", a.str("operator"), a.int("min"))
		}),
		eval: evalRestoreRead,
	},
	{
		name: "sink-committed",
		args: []argSpec{sinkArg, {name: "min", kind: kInt, required: true}},
		describe: both(func(a args) string {
			return fmt.Sprintf("The sink has committed at least %s.", plural(a.int("min"), "result"))
		},
			func(a args) string { return fmt.Sprintf("sink 至少已提交 %d 个结果。", a.int("min")) }),
		eval: evalSinkCommitted,
	},
	{
		name: "sink-duplicates",
		args: []argSpec{sinkArg, {name: "min", kind: kInt, required: true}},
		describe: both(func(a args) string {
			return fmt.Sprintf("The sink holds at least %s.", plural(a.int("min"), "duplicate result"))
		},
			func(a args) string { return fmt.Sprintf("sink 中至少有 %d 个重复的结果。", a.int("min")) }),
		eval: evalSinkDuplicates,
	},
	{
		name: "no-sink-duplicates",
		args: []argSpec{sinkArg},
		describe: both(func(args) string { return "No result is committed more often than the ground truth says." },
			func(args) string { return "没有任何结果的提交次数多于标准答案。" }),
		eval: evalNoSinkDuplicates,
	},
	{
		name: "no-sink-losses",
		args: []argSpec{sinkArg},
		describe: both(func(args) string { return "Every result of the ground truth is committed: nothing is missing." },
			func(args) string { return "标准答案中的每个结果都已提交：没有缺失。" }),
		eval: evalNoSinkLosses,
	},
	{
		name: "window-counts-exact",
		args: []argSpec{sinkArg, {name: "n", kind: kInt, required: true}, {name: "min", kind: kInt}},
		describe: both(func(a args) string {
			return fmt.Sprintf("At least %s committed, each exactly %d.", plural(max(a.int("min"), 1), "window count"), a.int("n"))
		}, func(a args) string {
			return fmt.Sprintf("至少已提交 %d 个窗口计数，每个都恰好是 %d。", max(a.int("min"), 1), a.int("n"))
		}),
		eval: evalWindowCountsExact,
		lint: lintWindowCountsExact,
	},
	{
		name: "command-refused",
		args: []argSpec{{name: "name", kind: kString, required: true}},
		describe: both(func(a args) string { return fmt.Sprintf("The engine refused the %s command.", a.str("name")) },
			func(a args) string { return fmt.Sprintf("引擎拒绝了 %s 命令。", a.str("name")) }),
		eval: evalCommandRefused,
	},
	{
		name: "state-expired",
		args: []argSpec{{name: "operator", kind: kString, required: true, ref: refKeyed}, {name: "key", kind: kScalar, required: true}},
		describe: both(func(a args) string {
			return fmt.Sprintf("The state of %s in %s has expired: its last access plus the TTL has passed (no read will return it).", a.str("key"), a.str("operator"))
		}, func(a args) string {
			return fmt.Sprintf("%s 中 %s 的状态已过期：上次访问时间加上 TTL 已经过去（读取不会再返回它）。", a.str("operator"), a.str("key"))
		}),
		state: true,
		eval:  evalStateExpired,
	},
	{
		name: "checkpoint-unaligned",
		args: []argSpec{{name: "min", kind: kInt, required: true}},
		describe: both(func(a args) string {
			return fmt.Sprintf("At least %s completed unaligned in this step, with in-flight records as channel state.", plural(a.int("min"), "checkpoint"))
		}, func(a args) string {
			return fmt.Sprintf("这一步中至少有 %d 个检查点以非对齐方式完成，并把传输中的记录作为通道状态写入。", a.int("min"))
		}),
		eval: evalCheckpointUnaligned,
	},
	{
		name:  "timer-pending",
		args:  []argSpec{{name: "operator", kind: kString, required: true, ref: refKeyed}, {name: "key", kind: kScalar, required: true}, {name: "subtask", kind: kInt, required: true}},
		state: true,
		describe: both(func(a args) string {
			return fmt.Sprintf("A timer of the key %s is pending on %s#%d, which owns its key group.", a.str("key"), a.str("operator"), a.int("subtask"))
		}, func(a args) string {
			return fmt.Sprintf("键 %s 的定时器在负责其键组的 %s#%d 上等待触发。", a.str("key"), a.str("operator"), a.int("subtask"))
		}),
		eval: evalTimerPending,
	},
	{
		name: "upgrade-refused",
		args: []argSpec{{name: "operator", kind: kString}},
		describe: both(func(a args) string {
			if a.has("operator") {
				return fmt.Sprintf("The upgrade was refused: the savepoint's state of %s maps to no operator of the new job.", a.str("operator"))
			}
			return "The upgrade was refused: state in the savepoint maps to no operator of the new job."
		}, func(a args) string {
			if a.has("operator") {
				return fmt.Sprintf("升级被拒绝：保存点中 %s 的状态在新作业里找不到对应的算子。", a.str("operator"))
			}
			return "升级被拒绝：保存点中的状态在新作业里找不到对应的算子。"
		}),
		eval: evalUpgradeRefused,
	},
	{
		name:  "upgraded",
		args:  []argSpec{{name: "restores", kind: kString}, {name: "empty", kind: kString}, {name: "dropped", kind: kString}},
		oneOf: []string{"restores", "empty", "dropped"},
		describe: both(func(a args) string {
			var parts []string
			if a.has("restores") {
				parts = append(parts, a.str("restores")+" restored its state")
			}
			if a.has("empty") {
				parts = append(parts, a.str("empty")+" started with empty state")
			}
			if a.has("dropped") {
				parts = append(parts, "the state of "+a.str("dropped")+" was dropped")
			}
			return "The job was upgraded from a savepoint in this step: " + strings.Join(parts, ", ") + "."
		}, func(a args) string {
			var parts []string
			if a.has("restores") {
				parts = append(parts, a.str("restores")+" 恢复了它的状态")
			}
			if a.has("empty") {
				parts = append(parts, a.str("empty")+" 以空状态启动")
			}
			if a.has("dropped") {
				parts = append(parts, a.str("dropped")+" 的状态被丢弃")
			}
			return "作业在这一步中从保存点完成了升级：" + strings.Join(parts, "，") + "。"
		}),
		eval: evalUpgraded,
	},
}

func init() {
	for _, p := range predicateTable {
		register(p)
	}
}

// evalJobStatus evaluates job-status (args: status): it holds when the job's status is status
// (CREATED, RUNNING, RESTARTING, FAILING, FAILED, CANCELED, FINISHED).
func evalJobStatus(a args, o *Observation) (bool, string) {
	if got := string(o.Now.Job.Status); got != a.str("status") {
		return false, "the job is " + got
	}
	return true, ""
}

// lintJobStatus refuses a status that Flink's JobStatus does not have.
func lintJobStatus(a args, _ *jobState) error {
	switch engine.JobStatus(a.str("status")) {
	case engine.JobCreated, engine.JobRunning, engine.JobFailing, engine.JobRestarting, engine.JobFailed, engine.JobCanceled, engine.JobFinished:
		return nil
	}
	return fmt.Errorf("job-status: unknown status %q (want CREATED, RUNNING, FAILING, RESTARTING, FAILED, CANCELED or FINISHED)", a.str("status"))
}

// evalAllRunning evaluates all-running (no args): it holds when the job is RUNNING, no rescale is
// under way, and every subtask is RUNNING (or FINISHED).
func evalAllRunning(_ args, o *Observation) (bool, string) {
	j := o.Now.Job
	if j.Status != engine.JobRunning {
		return false, "the job is " + string(j.Status)
	}
	if j.Rescale != nil {
		return false, "a rescale of " + j.Rescale.Operator + " is in progress"
	}
	for _, op := range j.Operators {
		for _, st := range op.Subtasks {
			if st.Status != engine.TaskRunning && st.Status != engine.TaskFinished {
				return false, fmt.Sprintf("%s is %s", st.Name, st.Status)
			}
		}
	}
	return true, ""
}

// evalWaitingForResources evaluates waiting-for-resources (no args): it holds when the job needs
// more slots than the alive TaskManagers offer.
func evalWaitingForResources(_ args, o *Observation) (bool, string) {
	j := o.Now.Job
	if !j.WaitingForResources {
		return false, fmt.Sprintf("the job is %s and not waiting (needs %d slots, %d available)", j.Status, j.SlotsNeeded, j.SlotsAvailable)
	}
	return true, ""
}

// evalRestarted evaluates restarted (args: min): it holds when the job restarted at least min
// times during this step.
func evalRestarted(a args, o *Observation) (bool, string) {
	n := o.Now.Counters.Restarts - o.Start.Counters.Restarts
	if n < a.int("min") {
		return false, fmt.Sprintf("the job restarted %d time(s) in this step", n)
	}
	return true, ""
}

// evalParallelism evaluates parallelism (args: operator, n): it holds when the operator runs n
// subtasks.
func evalParallelism(a args, o *Observation) (bool, string) {
	op, why := operatorView(o.Now, a.str("operator"))
	if op == nil {
		return false, why
	}
	if op.Parallelism != a.int("n") || len(op.Subtasks) != a.int("n") {
		return false, fmt.Sprintf("%s has parallelism %d with %d subtasks", op.ID, op.Parallelism, len(op.Subtasks))
	}
	return true, ""
}

// evalMaxParallelism evaluates max-parallelism (args: operator, n): it holds when the operator has
// n key groups.
func evalMaxParallelism(a args, o *Observation) (bool, string) {
	op, why := operatorView(o.Now, a.str("operator"))
	if op == nil {
		return false, why
	}
	if op.MaxParallelism != a.int("n") {
		return false, fmt.Sprintf("%s has max parallelism %d", op.ID, op.MaxParallelism)
	}
	return true, ""
}

// evalTaskmanagers evaluates taskmanagers (args: alive or min): it holds when exactly alive (or at
// least min) TaskManagers are ALIVE.
func evalTaskmanagers(a args, o *Observation) (bool, string) {
	n := 0
	for _, tm := range o.Now.TaskManagers {
		if tm.Status == engine.TMAlive {
			n++
		}
	}
	if (a.has("alive") && n != a.int("alive")) || (a.has("min") && n < a.int("min")) {
		return false, fmt.Sprintf("%d TaskManager(s) are alive", n)
	}
	return true, ""
}

// evalTaskmanagerLost evaluates taskmanager-lost (args: taskManager (optional)): it holds when
// during this step a TaskManager (that one) was lost — its subtasks died and its local disk was
// wiped; a crashed subtask does not count (event, or ALIVE at the step's start and LOST now).
func evalTaskmanagerLost(a args, o *Observation) (bool, string) {
	want := a.str("taskManager")
	for _, e := range o.Events {
		if e.Kind == engine.EvTaskManager && e.Status == engine.TMLost && (want == "" || e.TaskManager == want) {
			return true, ""
		}
	}
	// A viewer may have missed the event: a TaskManager alive when
	// the step began and lost now was lost in this step.
	alive := map[string]bool{}
	for _, tm := range o.Start.TaskManagers {
		alive[tm.ID] = tm.Status == engine.TMAlive
	}
	for _, tm := range o.Now.TaskManagers {
		if tm.Status == engine.TMLost && alive[tm.ID] && (want == "" || tm.ID == want) {
			return true, ""
		}
	}
	if want != "" {
		return false, "TaskManager " + want + " was not lost in this step (a crashed subtask is not a lost TaskManager)"
	}
	return false, "no TaskManager was lost in this step (a crashed subtask is not a lost TaskManager)"
}

// lintTaskmanagerLost refuses a TaskManager the step's cluster does not have.
func lintTaskmanagerLost(a args, js *jobState) error {
	if !a.has("taskManager") {
		return nil
	}
	var n int
	tm := a.str("taskManager")
	if _, err := fmt.Sscanf(tm, "tm-%d", &n); err != nil || n < 1 || n > js.tms || tm != fmt.Sprintf("tm-%d", n) {
		return fmt.Errorf("taskmanager-lost: there is no TaskManager %q; the cluster has tm-1 … tm-%d here", tm, js.tms)
	}
	return nil
}

// evalCheckpointing evaluates checkpointing (args: periodic (true/false) and/or mode): it holds
// when the job takes periodic checkpoints (or not), in exactly-once or at-least-once mode — e.g.
// to tell that a reset to a variant happened.
func evalCheckpointing(a args, o *Observation) (bool, string) {
	cp := o.Now.Checkpoints
	if a.has("periodic") && (cp.Interval > 0) != a.bool("periodic") {
		if cp.Interval > 0 {
			return false, fmt.Sprintf("the job takes a checkpoint every %s", cp.Interval)
		}
		return false, "the job takes no periodic checkpoints"
	}
	if a.has("mode") && string(cp.Mode) != a.str("mode") {
		return false, fmt.Sprintf("checkpoints run in %s mode", cp.Mode)
	}
	return true, ""
}

// lintCheckpointing refuses a checkpointing mode other than exactly-once and at-least-once.
func lintCheckpointing(a args, _ *jobState) error {
	if !a.has("mode") {
		return nil
	}
	switch engine.CheckpointMode(a.str("mode")) {
	case engine.ExactlyOnce, engine.AtLeastOnce:
		return nil
	}
	return fmt.Errorf("checkpointing: unknown mode %q (want exactly-once or at-least-once)", a.str("mode"))
}

// completedPredicate builds checkpoint-completed (savepoint false) and
// savepoint-completed (savepoint true); see evalCompleted.
func completedPredicate(savepoint bool) *predicate {
	name, what, zh := "checkpoint-completed", "checkpoint", "检查点"
	if savepoint {
		name, what, zh = "savepoint-completed", "savepoint", "保存点"
	}
	return &predicate{
		name:  name,
		args:  []argSpec{{name: "min", kind: kInt}, {name: "new", kind: kInt}},
		oneOf: []string{"min", "new"},
		describe: both(func(a args) string {
			var parts []string
			if a.has("min") {
				parts = append(parts, fmt.Sprintf("At least %s %s completed.", plural(a.int("min"), what), hasHave(a.int("min"))))
			}
			if a.has("new") {
				parts = append(parts, fmt.Sprintf("At least %s completed in this step.", plural(a.int("new"), "new "+what)))
			}
			return strings.Join(parts, " ")
		}, func(a args) string {
			var parts []string
			if a.has("min") {
				parts = append(parts, fmt.Sprintf("至少已完成 %d 个%s。", a.int("min"), zh))
			}
			if a.has("new") {
				parts = append(parts, fmt.Sprintf("这一步中至少又完成了 %d 个%s。", a.int("new"), zh))
			}
			return strings.Join(parts, "")
		}),
		eval: func(a args, o *Observation) (bool, string) { return evalCompleted(a, o, savepoint, what) },
	}
}

// evalCompleted evaluates checkpoint-completed and savepoint-completed
// (args: min (total) and/or new (this step)): it holds when at least min
// checkpoints — or savepoints, never the two mixed — have completed in all,
// and at least new of them since the step began.
func evalCompleted(a args, o *Observation, savepoint bool, what string) (bool, string) {
	total := completedCount(o.Now, savepoint)
	fresh := completedSince(o.Start, o.Now, savepoint)
	if a.has("min") && total < a.int("min") {
		return false, plural(total, what) + " " + hasHave(total) + " completed"
	}
	if a.has("new") && fresh < a.int("new") {
		return false, plural(fresh, what) + " completed in this step"
	}
	return true, ""
}

// evalCheckpointStorage evaluates checkpoint-storage (args: kind): it holds when checkpoints go to
// jobmanager or filesystem storage.
func evalCheckpointStorage(a args, o *Observation) (bool, string) {
	if got := string(o.Now.Checkpoints.Storage.Kind); got != a.str("kind") {
		return false, "checkpoints go to " + got + " storage"
	}
	return true, ""
}

// lintCheckpointStorage refuses a storage kind other than jobmanager and filesystem.
func lintCheckpointStorage(a args, _ *jobState) error {
	if k := a.str("kind"); k != "jobmanager" && k != "filesystem" {
		return fmt.Errorf("checkpoint-storage: unknown kind %q (want jobmanager or filesystem)", k)
	}
	return nil
}

// evalCheckpointIncremental evaluates checkpoint-incremental (args: min): it holds when at least
// min completed checkpoints uploaded less than their full state size (pebble, incremental).
func evalCheckpointIncremental(a args, o *Observation) (bool, string) {
	n := 0
	for _, h := range o.Now.Checkpoints.History {
		if !h.Savepoint && h.Status == engine.CheckpointCompleted && h.CheckpointedSize > 0 && h.CheckpointedSize < h.StateSize {
			n++
		}
	}
	if n < a.int("min") {
		return false, fmt.Sprintf("%d checkpoint(s) uploaded less than their full size", n)
	}
	return true, ""
}

// lintCheckpointIncremental refuses the check on a job that is not on the pebble backend with
// incremental checkpoints.
func lintCheckpointIncremental(_ args, js *jobState) error {
	if js.spec.Backend != engine.BackendPebble || !js.spec.Checkpointing.Incremental {
		return fmt.Errorf("checkpoint-incremental: job %s is not on the pebble backend with incremental checkpoints", js.name)
	}
	return nil
}

// evalSharedFiles evaluates shared-files (args: min): it holds when the checkpoint directory's
// shared/ folder holds at least min files.
func evalSharedFiles(a args, o *Observation) (bool, string) {
	if n := o.Now.Checkpoints.Storage.SharedFiles; n < a.int("min") {
		return false, fmt.Sprintf("%d shared file(s)", n)
	}
	return true, ""
}

// evalRetainedCheckpoints evaluates retained-checkpoints (args: n): it holds when exactly n
// completed checkpoints are retained.
func evalRetainedCheckpoints(a args, o *Observation) (bool, string) {
	if n := o.Now.Checkpoints.Storage.Retained; n != a.int("n") {
		return false, fmt.Sprintf("%d checkpoint(s) are retained", n)
	}
	return true, ""
}

// evalChannelBlocked evaluates channel-blocked (args: operator): it holds when during this step a
// channel into a subtask of operator was blocked for alignment (event).
func evalChannelBlocked(a args, o *Observation) (bool, string) {
	for _, e := range o.Events {
		if e.Kind == engine.EvChannelBlocked && taskOf(e.Task, a.str("operator")) {
			return true, ""
		}
	}
	return false, "no channel into " + a.str("operator") + " was blocked in this step"
}

// evalRestoredOperatorState evaluates restored-operator-state (args: operator, state, elements):
// it holds when the operator was rescaled during this step and every new subtask received exactly
// elements elements of that operator state (event).
func evalRestoredOperatorState(a args, o *Observation) (bool, string) {
	info := lastRescale(o.Events, a.str("operator"))
	if info == nil {
		return false, a.str("operator") + " was not rescaled in this step"
	}
	if len(info.OperatorState) == 0 {
		return false, "the rescale plan lists no operator state"
	}
	for i, m := range info.OperatorState {
		if n := len(m[a.str("state")]); n != a.int("elements") {
			return false, fmt.Sprintf("%s#%d restored %d element(s) of %s", a.str("operator"), i, n, a.str("state"))
		}
	}
	return true, ""
}

// evalSourcePartitions evaluates source-partitions (args: operator, equals ([[p0, p1, p2], [p3,
// p4]])): it holds when subtask i's offsets operator state holds exactly those partitions, in that
// order.
func evalSourcePartitions(a args, o *Observation) (bool, string) {
	op, why := operatorView(o.Now, a.str("operator"))
	if op == nil {
		return false, why
	}
	got := make([][]string, len(op.Subtasks))
	for i, st := range op.Subtasks {
		got[i] = []string{}
		for _, e := range st.OperatorState["offsets"] {
			var po struct {
				Partition *int `json:"partition"`
			}
			if json.Unmarshal([]byte(e), &po) != nil || po.Partition == nil {
				return false, fmt.Sprintf("%s holds an offsets element %q that names no partition", st.Name, e)
			}
			got[i] = append(got[i], fmt.Sprintf("p%d", *po.Partition))
		}
	}
	if !equalMatrix(got, a.texts("equals")) {
		return false, "the partitions are " + formatValue(got)
	}
	return true, ""
}

// evalOperatorState evaluates operator-state (args: operator, state, equals (a list per subtask)):
// it holds when subtask i's elements of that operator state, as the state inspector renders them
// (key=value for broadcast state), are row i of equals.
func evalOperatorState(a args, o *Observation) (bool, string) {
	op, why := operatorView(o.Now, a.str("operator"))
	if op == nil {
		return false, why
	}
	got := make([][]string, len(op.Subtasks))
	for i, st := range op.Subtasks {
		got[i] = append([]string{}, st.OperatorState[a.str("state")]...)
	}
	if !equalMatrix(got, a.texts("equals")) {
		return false, fmt.Sprintf("the %s state is %s", a.str("state"), formatValue(got))
	}
	return true, ""
}

// evalSourceRead evaluates source-read (args: operator (optional), min): it holds when the sources
// have read at least min records.
func evalSourceRead(a args, o *Observation) (bool, string) {
	var n int64
	for _, s := range o.Now.Sources {
		if a.has("operator") && s.Operator != a.str("operator") {
			continue
		}
		for _, p := range s.Partitions {
			n += max(p.Offset, p.Checkpointed, 0)
		}
	}
	if n < int64(a.int("min")) {
		return false, fmt.Sprintf("the sources have read %d records", n)
	}
	return true, ""
}

// evalKeyedState evaluates keyed-state (args: operator, key, equals, state (optional)): it holds
// when the key's value, read from the subtask that owns its key group, is equals (state).
func evalKeyedState(a args, o *Observation) (bool, string) {
	op, why := operatorView(o.Now, a.str("operator"))
	if op == nil {
		return false, why
	}
	st, _ := ownerOfKey(op, a.str("key"))
	if st == nil {
		return false, fmt.Sprintf("no subtask of %s owns the key %s", op.ID, a.str("key"))
	}
	e, why := findKey(o.State, st.Name, a.str("key"), a.str("state"))
	if e == nil {
		return false, why
	}
	if e.Value != a.str("equals") {
		return false, fmt.Sprintf("%s holds %s=%s", st.Name, e.Key, e.Value)
	}
	return true, ""
}

// evalKeyOwner evaluates key-owner (args: operator, key, subtask): it holds when the key's key
// group belongs to subtask and that subtask holds the key (state).
func evalKeyOwner(a args, o *Observation) (bool, string) {
	op, why := operatorView(o.Now, a.str("operator"))
	if op == nil {
		return false, why
	}
	st, kg := ownerOfKey(op, a.str("key"))
	if st == nil {
		return false, fmt.Sprintf("no subtask of %s owns key group %d", op.ID, kg)
	}
	if st.Index != a.int("subtask") {
		return false, fmt.Sprintf("key group %d of %s belongs to %s", kg, a.str("key"), st.Name)
	}
	if e, why := findKey(o.State, st.Name, a.str("key"), ""); e == nil {
		return false, why
	}
	return true, ""
}

// evalKeysInOwnKeyGroups evaluates keys-in-own-key-groups (args: operator): it holds when every
// key in every subtask lies in a key group of that subtask's range, and there is at least one key
// (state).
func evalKeysInOwnKeyGroups(a args, o *Observation) (bool, string) {
	op, why := operatorView(o.Now, a.str("operator"))
	if op == nil {
		return false, why
	}
	keys := 0
	for _, st := range op.Subtasks {
		if st.KeyGroups == nil {
			return false, st.Name + " has no key-group range"
		}
		v, err := o.State.TaskState(st.Name, 0)
		if err != nil {
			return false, fmt.Sprintf("read the state of %s: %v", st.Name, err)
		}
		if v.Error != "" {
			return false, st.Name + ": " + v.Error
		}
		for _, e := range v.Keyed {
			kg := rescale.KeyGroupForString(e.Key, op.MaxParallelism)
			if kg != e.KeyGroup {
				return false, fmt.Sprintf("%s stores %s in key group %d, but its key group is %d", st.Name, e.Key, e.KeyGroup, kg)
			}
			if !st.KeyGroups.Contains(kg) {
				return false, fmt.Sprintf("%s holds %s of key group %d, outside its range %v", st.Name, e.Key, kg, *st.KeyGroups)
			}
			keys++
		}
	}
	if keys == 0 {
		return false, op.ID + " holds no keys yet"
	}
	return true, ""
}

// evalKeyGroupRanges evaluates key-group-ranges (args: operator, equals ([[0, 4], [5, 9]])): it
// holds when the subtasks' key-group ranges, inclusive, are equals.
func evalKeyGroupRanges(a args, o *Observation) (bool, string) {
	op, why := operatorView(o.Now, a.str("operator"))
	if op == nil {
		return false, why
	}
	got := make([][]int, len(op.Subtasks))
	for i, st := range op.Subtasks {
		if st.KeyGroups == nil {
			return false, st.Name + " has no key-group range"
		}
		got[i] = []int{st.KeyGroups.Start, st.KeyGroups.End}
	}
	if !equalMatrix(got, a.ints("equals")) {
		return false, "the ranges are " + formatValue(got)
	}
	return true, ""
}

// lintKeyGroupRanges refuses a row that is not a range [first, last].
func lintKeyGroupRanges(a args, _ *jobState) error {
	for _, r := range a.ints("equals") {
		if len(r) != 2 || r[0] > r[1] {
			return fmt.Errorf("key-group-ranges: %v is not a range [first, last]", r)
		}
	}
	return nil
}

// evalKeyGroupMoved evaluates key-group-moved (args: operator, group, from, to): it holds when
// during this step the key group's owner changed from subtask from to to.
func evalKeyGroupMoved(a args, o *Observation) (bool, string) {
	before, why := owners(o.Start, a.str("operator"))
	if before == nil {
		return false, why
	}
	after, why := owners(o.Now, a.str("operator"))
	if after == nil {
		return false, why
	}
	g := a.int("group")
	if g < 0 || g >= len(before) || g >= len(after) {
		return false, fmt.Sprintf("%s has no key group %d", a.str("operator"), g)
	}
	if before[g] != a.int("from") || after[g] != a.int("to") {
		return false, fmt.Sprintf("key group %d went from subtask %d to subtask %d", g, before[g], after[g])
	}
	return true, ""
}

// evalKeyGroupsMoved evaluates key-groups-moved (args: operator, n): it holds when during this
// step exactly n key groups changed owner.
func evalKeyGroupsMoved(a args, o *Observation) (bool, string) {
	before, why := owners(o.Start, a.str("operator"))
	if before == nil {
		return false, why
	}
	after, why := owners(o.Now, a.str("operator"))
	if after == nil {
		return false, why
	}
	if len(before) != len(after) {
		return false, "the number of key groups changed"
	}
	n := 0
	for g := range before {
		if before[g] != after[g] {
			n++
		}
	}
	if n != a.int("n") {
		return false, fmt.Sprintf("%d key groups changed subtask", n)
	}
	return true, ""
}

// evalKeyGroupReads evaluates key-group-reads (args: operator, subtask, equals ([[old subtask,
// first, last], …])): it holds when in this step's rescale, the new subtask restored exactly those
// key-group ranges from those old subtasks (event).
func evalKeyGroupReads(a args, o *Observation) (bool, string) {
	info := lastRescale(o.Events, a.str("operator"))
	if info == nil || info.Plan == nil {
		return false, a.str("operator") + " was not rescaled in this step"
	}
	i := a.int("subtask")
	if i < 0 || i >= len(info.Plan.Subtasks) {
		return false, fmt.Sprintf("the rescale plan has no new subtask %d", i)
	}
	got := [][]int{}
	for _, r := range info.Plan.Subtasks[i].Reads {
		got = append(got, []int{r.OldSubtask, r.Range.Start, r.Range.End})
	}
	if !equalMatrix(got, a.ints("equals")) {
		return false, fmt.Sprintf("%s#%d read %s ([old subtask, first, last])", a.str("operator"), i, formatValue(got))
	}
	return true, ""
}

// lintKeyGroupReads refuses a row that is not [old subtask, first, last].
func lintKeyGroupReads(a args, _ *jobState) error {
	for _, r := range a.ints("equals") {
		if len(r) != 3 || r[1] > r[2] {
			return fmt.Errorf("key-group-reads: %v is not [old subtask, first, last]", r)
		}
	}
	return nil
}

// evalBackendLocalDisk evaluates backend-local-disk (args: operator, min): it holds when every
// subtask of the operator has at least min bytes of state on its TaskManager's local disk
// (pebble).
func evalBackendLocalDisk(a args, o *Observation) (bool, string) {
	return everySubtask(o.Now, a.str("operator"), func(st engine.SubtaskView) (bool, string) {
		if st.State == nil || st.State.LocalDiskBytes < int64(a.int("min")) {
			return false, fmt.Sprintf("%s has %d bytes on local disk", st.Name, localDisk(st))
		}
		return true, ""
	})
}

// lintBackendLocalDisk refuses the check on a job whose state lives on the heap.
func lintBackendLocalDisk(_ args, js *jobState) error {
	if js.spec.Backend != engine.BackendPebble {
		return fmt.Errorf("backend-local-disk: job %s keeps state on the heap (backend %s), not on local disk", js.name, js.spec.Backend)
	}
	return nil
}

// evalRestoreRead evaluates restore-read (args: operator, min): it holds when every subtask of the
// operator read at least min bytes of state when it restored.
func evalRestoreRead(a args, o *Observation) (bool, string) {
	return everySubtask(o.Now, a.str("operator"), func(st engine.SubtaskView) (bool, string) {
		if st.State == nil || st.State.RestoreBytesRead < int64(a.int("min")) {
			var n int64
			if st.State != nil {
				n = st.State.RestoreBytesRead
			}
			return false, fmt.Sprintf("%s read %d bytes when it restored", st.Name, n)
		}
		return true, ""
	})
}

// evalSinkCommitted evaluates sink-committed (args: sink (optional), min): it holds when the sink
// has committed at least min records.
func evalSinkCommitted(a args, o *Observation) (bool, string) {
	s, why := sinkView(o.Now, a.str("sink"))
	if s == nil {
		return false, why
	}
	if s.Committed < a.int("min") {
		return false, fmt.Sprintf("%s has committed %d results", s.Operator, s.Committed)
	}
	return true, ""
}

// evalSinkDuplicates evaluates sink-duplicates (args: sink (optional), min): it holds when the
// sink holds at least min records more often than the ground truth.
func evalSinkDuplicates(a args, o *Observation) (bool, string) {
	c, why := comparison(o.Now, a.str("sink"))
	if c == nil {
		return false, why
	}
	if c.DuplicateRecords < a.int("min") {
		return false, fmt.Sprintf("%s holds %d duplicate results", c.Sink, c.DuplicateRecords)
	}
	return true, ""
}

// evalNoSinkDuplicates evaluates no-sink-duplicates (args: sink (optional)): it holds when no
// record is committed more often than the ground truth says.
func evalNoSinkDuplicates(a args, o *Observation) (bool, string) {
	c, why := comparison(o.Now, a.str("sink"))
	if c == nil {
		return false, why
	}
	if len(c.Duplicates) > 0 {
		return false, fmt.Sprintf("%s holds %d duplicate results, e.g. %s", c.Sink, c.DuplicateRecords, c.Duplicates[0])
	}
	return true, ""
}

// evalNoSinkLosses evaluates no-sink-losses (args: sink (optional)): it holds when every record of
// the ground truth is committed (so: the output is complete).
func evalNoSinkLosses(a args, o *Observation) (bool, string) {
	c, why := comparison(o.Now, a.str("sink"))
	if c == nil {
		return false, why
	}
	if len(c.Losses) > 0 {
		return false, fmt.Sprintf("%s misses %d results, e.g. %s", c.Sink, c.LostRecords, c.Losses[0])
	}
	return true, ""
}

// evalWindowCountsExact evaluates window-counts-exact (args: sink (optional), n, min (default 1)):
// it holds when at least min window counts are committed, none twice and none wrong — so each is
// exactly n; the lint checks that n is the click source's clicksPerWindow.
func evalWindowCountsExact(a args, o *Observation) (bool, string) {
	c, why := comparison(o.Now, a.str("sink"))
	if c == nil {
		return false, why
	}
	switch {
	case c.Mode != "exact":
		return false, fmt.Sprintf("%s has no exact ground truth (mode %s)", c.Sink, c.Mode)
	case len(c.Duplicates) > 0:
		return false, fmt.Sprintf("%s holds a window count twice: %s", c.Sink, c.Duplicates[0])
	case len(c.Unexpected) > 0:
		return false, fmt.Sprintf("%s holds a wrong window count: %s", c.Sink, c.Unexpected[0])
	case c.Committed < max(a.int("min"), 1):
		return false, fmt.Sprintf("%s has committed %d window counts", c.Sink, c.Committed)
	}
	return true, ""
}

// lintWindowCountsExact refuses an n that is not the click source's clicksPerWindow.
func lintWindowCountsExact(a args, js *jobState) error {
	for _, o := range js.spec.Operators {
		if o.Kind != engine.KindSource || o.Options["generator"] != engine.GeneratorClicks {
			continue
		}
		per, err := toInt(o.Options["clicksPerWindow"])
		if err == nil && per == a.int("n") {
			return nil
		}
		return fmt.Errorf("window-counts-exact: n is %d, but source %s generates %v clicks per page and window", a.int("n"), o.ID, o.Options["clicksPerWindow"])
	}
	return fmt.Errorf("window-counts-exact: job %s has no click source with clicksPerWindow set", js.name)
}

// evalCommandRefused evaluates command-refused (args: name): it holds when during this step the
// engine refused a command of that name.
func evalCommandRefused(a args, o *Observation) (bool, string) {
	from := len(o.Start.Commands)
	if from > len(o.Now.Commands) {
		from = 0
	}
	for _, c := range o.Now.Commands[from:] {
		if c.Failed && c.Command.Name == a.str("name") {
			return true, ""
		}
	}
	return false, "no " + a.str("name") + " command was refused in this step"
}

// evalTimerPending evaluates timer-pending (args: operator, key, subtask):
// it holds when the key's key group belongs to that subtask and a timer of
// the key is registered there (the timer service's keyed state, as Flink's
// InternalTimerServiceImpl keeps timers per key group) (state).
func evalTimerPending(a args, o *Observation) (bool, string) {
	op, why := operatorView(o.Now, a.str("operator"))
	if op == nil {
		return false, why
	}
	st, kg := ownerOfKey(op, a.str("key"))
	if st == nil {
		return false, fmt.Sprintf("no subtask of %s owns key group %d", op.ID, kg)
	}
	if st.Index != a.int("subtask") {
		return false, fmt.Sprintf("key group %d of %s belongs to %s", kg, a.str("key"), st.Name)
	}
	v, err := o.State.TaskState(st.Name, 0)
	if err != nil {
		return false, fmt.Sprintf("read the state of %s: %v", st.Name, err)
	}
	if v.Error != "" {
		return false, st.Name + ": " + v.Error
	}
	for _, tm := range v.Timers {
		if tm.Key == a.str("key") {
			return true, ""
		}
	}
	return false, fmt.Sprintf("%s has no timer of the key %s (%d timers pending)", st.Name, a.str("key"), len(v.Timers))
}

// upgradeRefusal is the start of the message Flink's
// Checkpoints.loadAndValidateCheckpoint refuses a restore with when
// savepoint state finds no operator (the engine's ErrNonRestoredState).
const upgradeRefusal = "Cannot map checkpoint/savepoint state for operator"

// evalUpgradeRefused evaluates upgrade-refused (args: operator): it holds
// when during this step the engine refused an upgrade because state of the
// savepoint (that operator's, when given) maps to no operator of the new job.
func evalUpgradeRefused(a args, o *Observation) (bool, string) {
	from := len(o.Start.Commands)
	if from > len(o.Now.Commands) {
		from = 0
	}
	seen := ""
	for _, c := range o.Now.Commands[from:] {
		if !c.Failed || c.Command.Name != engine.CmdUpgrade {
			continue
		}
		if !strings.Contains(c.Error, upgradeRefusal) {
			seen = "an upgrade was refused for another reason: " + c.Error
			continue
		}
		if a.has("operator") && !strings.Contains(c.Error, "That state is "+a.str("operator")+" (") {
			seen = "an upgrade was refused, but not for the state of " + a.str("operator") + ": " + c.Error
			continue
		}
		return true, ""
	}
	if seen != "" {
		return false, seen
	}
	return false, "no upgrade was refused in this step"
}

// evalUpgraded evaluates upgraded (args: restores, empty, dropped): it
// holds when during this step an upgrade started the changed job from a
// savepoint, and its restore-requested event says that operator restores
// state, starts with empty state, or had its state dropped
// (allowNonRestoredState).
func evalUpgraded(a args, o *Observation) (bool, string) {
	var msg string
	for _, e := range o.Events {
		if e.Kind == engine.EvRestoreRequested && strings.HasPrefix(e.Message, "upgrade from ") {
			msg = e.Message
		}
	}
	if msg == "" {
		return false, "no upgrade started a changed job in this step"
	}
	mapped, skipped, _ := strings.Cut(msg, "; skipped: ")
	if op := a.str("restores"); op != "" && !restoresState(mapped, op) {
		return false, "the upgrade did not restore " + op + "'s state: " + msg
	}
	if op := a.str("empty"); op != "" && !emptyState(mapped, op) {
		return false, "in the upgrade " + op + " did not start empty: " + msg
	}
	if op := a.str("dropped"); op != "" && !slices.ContainsFunc(strings.Split(skipped, "; "), func(p string) bool {
		// The message may go on after the list ("… (allowNonRestoredState). The new job numbers …").
		return strings.HasPrefix(p, "the state of "+op+" (") && strings.Contains(p, "(allowNonRestoredState)")
	}) {
		return false, "the upgrade did not drop " + op + "'s state: " + msg
	}
	return true, ""
}

// restoresState and emptyState read an upgrade's mapped sentences
// ("count (uid …) restores its own state", "count (…) starts with empty
// state"), one per operator of the new job.
func restoresState(mapped, op string) bool { return upgradeSentence(mapped, op, " restores ") }
func emptyState(mapped, op string) bool {
	return upgradeSentence(mapped, op, " starts with empty state")
}

func upgradeSentence(mapped, op, verb string) bool {
	if _, rest, ok := strings.Cut(mapped, ": "); ok && strings.HasPrefix(mapped, "upgrade from ") {
		mapped = rest
	}
	for _, part := range strings.Split(mapped, "; ") {
		if strings.HasPrefix(part, op+" (") && strings.Contains(part, ")"+verb) {
			return true
		}
	}
	return false
}

// --- helpers -------------------------------------------------------------------

// plural writes "1 checkpoint", "2 checkpoints".
// hasHave and itsTheir agree with a count: "1 checkpoint has", "2 checkpoints have".
func hasHave(n int) string {
	if n == 1 {
		return "has"
	}
	return "have"
}

func itsTheir(n int) string {
	if n == 1 {
		return "its"
	}
	return "their"
}

func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func operatorView(s *engine.Snapshot, id string) (*engine.OperatorView, string) {
	for i := range s.Job.Operators {
		if s.Job.Operators[i].ID == id {
			return &s.Job.Operators[i], ""
		}
	}
	return nil, "the job has no operator " + id
}

func taskOf(task, operator string) bool { return strings.HasPrefix(task, operator+"#") }

func everySubtask(s *engine.Snapshot, operator string, f func(engine.SubtaskView) (bool, string)) (bool, string) {
	op, why := operatorView(s, operator)
	if op == nil {
		return false, why
	}
	if len(op.Subtasks) == 0 {
		return false, operator + " has no subtasks"
	}
	for _, st := range op.Subtasks {
		if ok, why := f(st); !ok {
			return false, why
		}
	}
	return true, ""
}

func localDisk(st engine.SubtaskView) int64 {
	if st.State == nil {
		return 0
	}
	return st.State.LocalDiskBytes
}

// completedCount counts completed checkpoints (or savepoints): Flink's
// completed count minus the other kind, which the history still holds.
func completedCount(s *engine.Snapshot, savepoints bool) int {
	other := 0
	same := 0
	for _, h := range s.Checkpoints.History {
		if h.Status != engine.CheckpointCompleted {
			continue
		}
		if h.Savepoint == savepoints {
			same++
		} else {
			other++
		}
	}
	return max(s.Checkpoints.Counts.Completed-other, same)
}

// completedSince counts those completed after start: ids above every id
// start knew.
func completedSince(start, now *engine.Snapshot, savepoints bool) int {
	var last int64
	for _, h := range start.Checkpoints.History {
		last = max(last, h.ID)
	}
	n := 0
	for _, h := range now.Checkpoints.History {
		if h.ID > last && h.Status == engine.CheckpointCompleted && h.Savepoint == savepoints {
			n++
		}
	}
	return n
}

// latestCompleted is the newest completed checkpoint or savepoint.
func latestCompleted(s *engine.Snapshot) int64 {
	var id int64
	for _, h := range s.Checkpoints.History {
		if h.Status == engine.CheckpointCompleted {
			id = max(id, h.ID)
		}
	}
	for _, r := range s.Checkpoints.Retained {
		id = max(id, r.ID)
	}
	return id
}

func evalRestoredFrom(a args, o *Observation) (bool, string) {
	var want int64
	switch {
	case a.bool("savepoint"):
		r := o.Now.Checkpoints.LatestRestore
		if r == nil || !r.Savepoint {
			return false, "the job has not restored from a savepoint"
		}
		want = r.Checkpoint
	case a.str("checkpoint") == "latest":
		want = latestCompleted(o.Start)
		if want == 0 {
			return false, "no checkpoint had completed when the step began"
		}
	default:
		want = int64(a.int("checkpoint"))
	}
	// A restore from "the latest checkpoint" must be this step's; a
	// savepoint restore may have been planned in an earlier step (a job
	// waiting for slots has already chosen its savepoint).
	if !a.bool("savepoint") && want != 0 && o.Now.Counters.Restores <= o.Start.Counters.Restores {
		return false, "nothing was restored in this step"
	}
	n := 0
	for _, op := range o.Now.Job.Operators {
		if a.has("operator") && op.ID != a.str("operator") {
			continue
		}
		for _, st := range op.Subtasks {
			n++
			if st.RestoredFrom != want {
				if want == 0 {
					return false, fmt.Sprintf("%s restored from checkpoint %d", st.Name, st.RestoredFrom)
				}
				return false, fmt.Sprintf("%s restored from %d, want %d", st.Name, st.RestoredFrom, want)
			}
		}
	}
	if n == 0 {
		return false, "no subtask to judge"
	}
	return true, ""
}

// lastRescale returns the plan of the operator's latest rescale in events.
func lastRescale(events []engine.Event, operator string) *engine.RescaleInfo {
	var info *engine.RescaleInfo
	for _, e := range events {
		if e.Kind == engine.EvRescalePlan && e.Rescale != nil && e.Rescale.Operator == operator {
			info = e.Rescale
		}
	}
	return info
}

// ownerOfKey returns the subtask whose key-group range holds the key.
func ownerOfKey(op *engine.OperatorView, key string) (*engine.SubtaskView, int) {
	kg := rescale.KeyGroupForString(key, op.MaxParallelism)
	for i := range op.Subtasks {
		if r := op.Subtasks[i].KeyGroups; r != nil && r.Contains(kg) {
			return &op.Subtasks[i], kg
		}
	}
	return nil, kg
}

func findKey(sr StateReader, task, key, stateName string) (*stateEntry, string) {
	v, err := sr.TaskState(task, 0)
	if err != nil {
		return nil, fmt.Sprintf("read the state of %s: %v", task, err)
	}
	if v.Error != "" {
		return nil, task + ": " + v.Error
	}
	for _, e := range v.Keyed {
		if e.Key == key && (stateName == "" || e.State == stateName) {
			return &stateEntry{Key: e.Key, Value: e.Value}, ""
		}
	}
	return nil, fmt.Sprintf("%s holds no key %s", task, key)
}

type stateEntry struct{ Key, Value string }

// owners maps every key group to the subtask owning it, from the ranges
// the snapshot shows.
func owners(s *engine.Snapshot, operator string) ([]int, string) {
	op, why := operatorView(s, operator)
	if op == nil {
		return nil, why
	}
	out := make([]int, op.MaxParallelism)
	for i := range out {
		out[i] = -1
	}
	for _, st := range op.Subtasks {
		if st.KeyGroups == nil {
			return nil, st.Name + " has no key-group range"
		}
		for g := st.KeyGroups.Start; g <= st.KeyGroups.End && g < len(out); g++ {
			out[g] = st.Index
		}
	}
	return out, ""
}

func sinkView(s *engine.Snapshot, id string) (*engine.SinkView, string) {
	for i := range s.Sinks {
		if id == "" || s.Sinks[i].Operator == id {
			return &s.Sinks[i], ""
		}
	}
	if id == "" {
		return nil, "the job has no sink"
	}
	return nil, "the job has no sink " + id
}

func comparison(s *engine.Snapshot, id string) (*engine.Comparison, string) {
	v, why := sinkView(s, id)
	if v == nil {
		return nil, why
	}
	if v.Comparison == nil {
		return nil, v.Operator + " has no comparison with the ground truth"
	}
	if !v.Comparison.Supported {
		return nil, v.Operator + " has no ground truth (the job's result depends on timing)"
	}
	return v.Comparison, ""
}

func equalMatrix[T comparable](a, b [][]T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}

func wasWere(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

// evalRedeployedSubtasks evaluates redeployed-subtasks (args: n): it holds when exactly n distinct
// subtasks stopped (FAILED or CANCELED) and were deployed again during this step — a region
// failover redeploys its pipelined region only, a global one every subtask.
func evalRedeployedSubtasks(a args, o *Observation) (bool, string) {
	stopped, seen := map[string]bool{}, map[string]bool{}
	for _, e := range o.Events {
		if e.Kind != engine.EvTaskStatus {
			continue
		}
		switch engine.TaskStatus(e.Status) {
		case engine.TaskFailed, engine.TaskCanceled, engine.TaskCanceling:
			stopped[e.Task] = true
		case engine.TaskDeploying:
			// A new attempt of a subtask that stopped in this step; a job's
			// first deployment (after a reset) is not a redeployment.
			if stopped[e.Task] {
				seen[e.Task] = true
			}
		}
	}
	if len(seen) != a.int("n") {
		names := make([]string, 0, len(seen))
		for n := range seen {
			names = append(names, n)
		}
		slices.Sort(names)
		if len(names) == 0 {
			return false, "no subtask was deployed in this step"
		}
		return false, fmt.Sprintf("%s deployed in this step (%s)", plural(len(names), "subtask")+" "+wasWere(len(names)), strings.Join(names, ", "))
	}
	return true, ""
}

// evalCheckpointFailed evaluates checkpoint-failed (args: min, reason (optional)): it holds when at
// least min checkpoints (not savepoints) failed during this step, all with reason when it is given
// (Flink's CheckpointFailureReason, e.g. CHECKPOINT_ASYNC_EXCEPTION).
func evalCheckpointFailed(a args, o *Observation) (bool, string) {
	before := map[int64]bool{}
	for _, h := range o.Start.Checkpoints.History {
		if h.Status == engine.CheckpointFailed {
			before[h.ID] = true
		}
	}
	n := 0
	for _, h := range o.Now.Checkpoints.History {
		if h.Savepoint || h.Status != engine.CheckpointFailed || before[h.ID] {
			continue
		}
		if !a.has("reason") || string(h.FailureReason) == a.str("reason") {
			n++
		}
	}
	if n < a.int("min") {
		if a.has("reason") {
			return false, fmt.Sprintf("%s failed with %s in this step", plural(n, "checkpoint"), a.str("reason"))
		}
		return false, fmt.Sprintf("%s failed in this step", plural(n, "checkpoint"))
	}
	return true, ""
}

// lintCheckpointFailed refuses a reason Flink does not have.
func lintCheckpointFailed(a args, _ *jobState) error {
	if !a.has("reason") {
		return nil
	}
	switch engine.CheckpointFailureReason(a.str("reason")) {
	case engine.CheckpointExpired, engine.CheckpointDeclined, engine.CheckpointAsyncException, engine.IOException,
		engine.FinalizeCheckpointFailure, engine.CheckpointDeclinedSubsumed, engine.CheckpointDeclinedTaskNotReady,
		engine.CheckpointSubsumed, engine.JobFailure, engine.NotAllRequiredTasksRunning, engine.JobFailoverRegion:
		return nil
	}
	return fmt.Errorf("checkpoint-failed: unknown reason %q (Flink's CheckpointFailureReason, e.g. CHECKPOINT_EXPIRED, CHECKPOINT_ASYNC_EXCEPTION)", a.str("reason"))
}

// evalRestoredLocally evaluates restored-locally (args: local): it holds when the job restored
// during this step and the restore read keyed state only from task-local copies (local: true) or
// only from checkpoint storage (local: false) — state.backend.local-recovery.
func evalRestoredLocally(a args, o *Observation) (bool, string) {
	r := o.Now.Checkpoints.LatestRestore
	if r == nil || o.Now.Counters.Restores <= o.Start.Counters.Restores {
		return false, "the job has not restored in this step"
	}
	if a.bool("local") && (r.LocalBytes == 0 || r.RemoteBytes > 0) {
		return false, fmt.Sprintf("the restore read %d bytes from local copies and %d from checkpoint storage", r.LocalBytes, r.RemoteBytes)
	}
	if !a.bool("local") && (r.RemoteBytes == 0 || r.LocalBytes > 0) {
		return false, fmt.Sprintf("the restore read %d bytes from local copies and %d from checkpoint storage", r.LocalBytes, r.RemoteBytes)
	}
	return true, ""
}

// evalStateExpired evaluates state-expired (args: operator, key): it holds when the subtask that
// owns the key's key group holds the key's TTL state with its last access plus the TTL at or
// before now (the inspector's Expired: still stored, no read will return it with
// NeverReturnExpired), or no longer holds the key at all (a read or cleanup removed it).
func evalStateExpired(a args, o *Observation) (bool, string) {
	op, why := operatorView(o.Now, a.str("operator"))
	if op == nil {
		return false, why
	}
	st, _ := ownerOfKey(op, a.str("key"))
	if st == nil {
		return false, fmt.Sprintf("no subtask of %s owns the key %s", op.ID, a.str("key"))
	}
	v, err := o.State.TaskState(st.Name, 0)
	if err != nil {
		return false, fmt.Sprintf("read the state of %s: %v", st.Name, err)
	}
	if v.Error != "" {
		return false, st.Name + ": " + v.Error
	}
	for _, e := range v.Keyed {
		if e.Key != a.str("key") {
			continue
		}
		if e.LastAccess == 0 {
			return false, fmt.Sprintf("%s holds %s=%s without a TTL", st.Name, e.Key, e.Value)
		}
		if !e.Expired {
			return false, fmt.Sprintf("%s holds %s=%s, last accessed at %d ms, not expired yet", st.Name, e.Key, e.Value, e.LastAccess)
		}
	}
	return true, ""
}

// evalCheckpointUnaligned evaluates checkpoint-unaligned (args: min): it holds when at least min
// checkpoints (not savepoints) completed during this step taken unaligned, holding in-flight
// records as channel state (CheckpointStats.Unaligned and a ChannelStateSize above 0).
func evalCheckpointUnaligned(a args, o *Observation) (bool, string) {
	var last int64
	for _, h := range o.Start.Checkpoints.History {
		last = max(last, h.ID)
	}
	n, aligned := 0, 0
	for _, h := range o.Now.Checkpoints.History {
		if h.ID <= last || h.Status != engine.CheckpointCompleted || h.Savepoint {
			continue
		}
		if h.Unaligned && h.ChannelStateSize > 0 {
			n++
		} else {
			aligned++
		}
	}
	if n < a.int("min") {
		return false, fmt.Sprintf("%s completed unaligned with channel state in this step (%d without)", plural(n, "checkpoint"), aligned)
	}
	return true, ""
}
