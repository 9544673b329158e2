package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/storage"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// gokaStorage picks goka's local table storage.
type gokaStorage string

const (
	gokaMemory  gokaStorage = "memory"
	gokaLevelDB gokaStorage = "leveldb"
)

// gokaResult is one goka run: the counts read back from the processor's
// table, the time from the first to the last record processed (the steady
// state, without Kafka's group join), and the time including start-up.
type gokaResult struct {
	counts  map[string]int64
	elapsed time.Duration
	total   time.Duration
}

// runGoka counts words with a goka processor (goka.Persist keeps the count
// per key in the group table, goka's keyed state) against an in-process
// Kafka from franz-go's kfake, listening on loopback. The input topic is
// filled first, with the word as the message key, so goka partitions by word
// as Flink's keyBy does; the processor reads it from the oldest offset.
// dir is an empty scratch directory for LevelDB.
func runGoka(ctx context.Context, words []string, partitions int, st gokaStorage, dir string) (gokaResult, error) {
	silenceGoka()
	const (
		input goka.Stream = "words"
		group goka.Group  = "wordcount"
	)
	// kfake listens on 127.0.0.1 only.
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(partitions), string(input)))
	if err != nil {
		return gokaResult{}, fmt.Errorf("start kfake: %w", err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()

	if err := fillTopic(ctx, brokers, string(input), words); err != nil {
		return gokaResult{}, err
	}

	var (
		done      = make(chan struct{})
		processed atomic.Int64
		firstAt   atomic.Int64
		lastAt    atomic.Int64
		n         = int64(len(words))
	)
	cb := func(gctx goka.Context, _ any) {
		if firstAt.Load() == 0 {
			firstAt.CompareAndSwap(0, time.Now().UnixNano())
		}
		var c int64
		if v := gctx.Value(); v != nil {
			c = v.(int64)
		}
		gctx.SetValue(c + 1)
		if processed.Add(1) == n {
			lastAt.Store(time.Now().UnixNano())
			close(done)
		}
	}
	var sb storage.Builder
	switch st {
	case gokaMemory:
		sb = storage.MemoryBuilder()
	case gokaLevelDB:
		sb = storage.DefaultBuilder(filepath.Join(dir, "leveldb"))
	default:
		return gokaResult{}, fmt.Errorf("unknown goka storage %q", st)
	}
	tmc := goka.NewTopicManagerConfig()
	tmc.Table.Replication = 1
	tmc.Stream.Replication = 1
	proc, err := goka.NewProcessor(brokers,
		goka.DefineGroup(group, goka.Input(input, new(codec.String), cb), goka.Persist(new(codec.Int64))),
		goka.WithStorageBuilder(sb),
		goka.WithTopicManagerBuilder(goka.TopicManagerBuilderWithTopicManagerConfig(tmc)),
		goka.WithLogger(quietLogger{}),
	)
	if err != nil {
		return gokaResult{}, fmt.Errorf("create goka processor: %w", err)
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	runErr := make(chan error, 1)
	go func() { runErr <- proc.Run(runCtx) }()
	select {
	case <-done:
	case err := <-runErr:
		return gokaResult{}, fmt.Errorf("goka processor stopped early: %w", err)
	case <-time.After(10 * time.Minute):
		return gokaResult{}, errors.New("goka processor did not finish within 10 minutes")
	case <-ctx.Done():
		return gokaResult{}, ctx.Err()
	}
	total := time.Since(start)
	res := gokaResult{
		counts:  make(map[string]int64),
		elapsed: time.Duration(lastAt.Load() - firstAt.Load()),
		total:   total,
	}
	// Every callback has returned (the last one closed done after SetValue),
	// so the table holds the final counts.
	for _, w := range words {
		if _, ok := res.counts[w]; ok {
			continue
		}
		v, err := proc.Get(w)
		if err != nil {
			return gokaResult{}, fmt.Errorf("read goka count of %q: %w", w, err)
		}
		if v != nil {
			res.counts[w] = v.(int64)
		}
	}
	cancel()
	if err := <-runErr; err != nil && !errors.Is(err, context.Canceled) {
		return gokaResult{}, fmt.Errorf("stop goka processor: %w", err)
	}
	return res, nil
}

// fillTopic produces every word (as key, value "1") to the topic and waits
// until all are acknowledged. The key decides the partition with goka's own
// hash (FNV-1a, sarama's rule), because goka requires the input to be
// co-partitioned with its group table; every record of a key is in one
// partition, in order.
func fillTopic(ctx context.Context, brokers []string, topic string, words []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(kgo.SaramaCompatHasher(fnv32a))),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(1<<16))
	if err != nil {
		return fmt.Errorf("create kafka producer: %w", err)
	}
	defer cl.Close()
	one := []byte("1")
	var failed atomic.Pointer[error]
	for _, w := range words {
		cl.Produce(ctx, &kgo.Record{Key: []byte(w), Value: one}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("flush input topic: %w", err)
	}
	if e := failed.Load(); e != nil {
		return fmt.Errorf("produce input: %w", *e)
	}
	return nil
}

// fnv32a is the FNV-1a hash goka's DefaultHasher uses, so records land in
// the partition goka expects for their key.
func fnv32a(b []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range b {
		h ^= uint32(c)
		h *= 16777619
	}
	return h
}

var silenced atomic.Bool

// silenceGoka stops goka and sarama from logging every rebalance to stderr.
func silenceGoka() {
	if silenced.Swap(true) {
		return
	}
	goka.SetSaramaLogger(quietLogger{})
	sarama.Logger = log.New(io.Discard, "", 0)
	cfg := goka.DefaultConfig()
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	goka.ReplaceGlobalConfig(cfg)
}

type quietLogger struct{}

func (quietLogger) Print(...any)          {}
func (quietLogger) Println(...any)        {}
func (quietLogger) Printf(string, ...any) {}
func (quietLogger) Debugf(string, ...any) {}
