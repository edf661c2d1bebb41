package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// expectation is one stdin line of -follow mode: the names the informer's store must hold (exactly).
type expectation struct {
	Names []string `json:"names"`
}

// follow runs one informer for the whole session (as a controller does) and, for each expectation
// read from stdin, waits until its store holds exactly those names, then prints how many lists (or
// watch-lists) it has made so far. A server that forgets the informer's resourceVersion answers the
// resumed watch with 410 and the informer lists again: the count shows it, convergence proves it healed.
func follow(ctx context.Context, dyn dynamic.Interface, namespace string, rec *recorder) int {
	out := json.NewEncoder(os.Stdout)
	inf := dynamicinformer.NewFilteredDynamicInformer(dyn, llamas, namespace, 0, cache.Indexers{}, nil).Informer()
	stop := make(chan struct{})
	defer close(stop)
	go inf.Run(stop)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		_ = out.Encode(result{Client: "client-go", Step: "follow-synced", OK: false, Error: "informer did not sync"})
		return 1
	}
	_ = out.Encode(result{Client: "client-go", Step: "follow-synced", OK: true, Detail: map[string]any{"lists": lists(rec)}})
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var want expectation
		if err := json.Unmarshal(in.Bytes(), &want); err != nil {
			_ = out.Encode(result{Client: "client-go", Step: "follow-converged", OK: false, Error: err.Error()})
			return 1
		}
		sort.Strings(want.Names)
		var have []string
		for {
			have = inf.GetStore().ListKeys()
			for i, k := range have {
				have[i] = k[len(namespace)+1:]
			}
			sort.Strings(have)
			if fmt.Sprint(have) == fmt.Sprint(want.Names) {
				break
			}
			select {
			case <-ctx.Done():
				_ = out.Encode(result{Client: "client-go", Step: "follow-converged", OK: false,
					Error: fmt.Sprintf("store holds %v, want %v", have, want.Names), Requests: rec.since(0)})
				return 1
			case <-time.After(100 * time.Millisecond):
			}
		}
		_ = out.Encode(result{Client: "client-go", Step: "follow-converged", OK: true,
			Detail: map[string]any{"lists": lists(rec), "resourceVersion": inf.LastSyncResourceVersion()}})
	}
	return 0
}

// lists counts the informer's initial-state requests so far: a LIST, or a watch-list (sendInitialEvents).
func lists(rec *recorder) int {
	n := 0
	for _, c := range rec.since(0) {
		if (c.Method == "GET" && !c.isWatch() && c.Status == 200) || (c.isWatch() && c.param("sendInitialEvents") == "true" && c.Status == 200) {
			n++
		}
	}
	return n
}
