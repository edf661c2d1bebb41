// clientgo-check drives farm-apiserver with the real k8s.io/client-go v0.33 (dynamic client, watch,
// watch-list List() and an informer with WatchListClient on) and prints one JSON line per step.
// It exits 1 when any step failed, 2 on bad usage.
//
//	clientgo-check -kubeconfig K -namespace NS [-timeout 60s]   (see ../README.md)
//	clientgo-check -follow ...: one informer; each stdin line {"names":[...]} waits for its store to hold them
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

var llamas = schema.GroupVersionResource{Group: "farm.example.com", Version: "v1alpha", Resource: "llamas"}

// result is one printed line.
type result struct {
	Client string         `json:"client"`
	Step   string         `json:"step"`
	OK     bool           `json:"ok"`
	Detail map[string]any `json:"detail,omitempty"`
	Error  string         `json:"error,omitempty"`
	// On failure: every request of the step, with the body of each error response.
	Requests []call `json:"requests,omitempty"`
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the server to test (required)")
	namespace := flag.String("namespace", "", "namespace to work in (required; must exist where namespaces are enforced)")
	timeout := flag.Duration("timeout", 60*time.Second, "overall deadline")
	followMode := flag.Bool("follow", false, "run one informer and answer stdin expectations (see follow.go)")
	flag.Parse()
	if *kubeconfig == "" || *namespace == "" {
		fmt.Fprintln(os.Stderr, "usage: clientgo-check -kubeconfig K -namespace NS [-timeout 60s]")
		os.Exit(2)
	}
	// The watch-list path is what this program checks: it is off by default in client-go v0.33.
	// An explicit KUBE_FEATURE_WatchListClient=false is honoured, and then the watchlist steps fail.
	if _, set := os.LookupEnv("KUBE_FEATURE_WatchListClient"); !set {
		_ = os.Setenv("KUBE_FEATURE_WatchListClient", "true")
	}

	// klog is where client-go reports a watch-list fallback: keep a copy to check and to print.
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	_ = klogFlags.Set("logtostderr", "false")
	_ = klogFlags.Set("alsologtostderr", "false")
	_ = klogFlags.Set("stderrthreshold", "FATAL")
	logs := &syncBuffer{}
	// klog writes a message to its own severity's writer and every lower one: collect it once, at INFO.
	klog.SetOutputBySeverity("INFO", io.MultiWriter(os.Stderr, logs))
	for _, sev := range []string{"WARNING", "ERROR", "FATAL"} {
		klog.SetOutputBySeverity(sev, io.Discard)
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	os.Exit(run(ctx, *kubeconfig, *namespace, logs, *followMode))
}

func run(ctx context.Context, kubeconfig, namespace string, logs *syncBuffer, followMode bool) int {
	out := json.NewEncoder(os.Stdout)
	fatal := func(step string, err error) int {
		_ = out.Encode(result{Client: "client-go", Step: step, OK: false, Error: err.Error()})
		return 1
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fatal("config", err)
	}
	rec := &recorder{}
	cfg.Wrap(rec.wrap)
	cfg.UserAgent = "farm-apiserver-clientgo-check"
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fatal("config", err)
	}
	if !clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
		return fatal("config", fmt.Errorf("client-go's WatchListClient feature is off (KUBE_FEATURE_WatchListClient=%q)", os.Getenv("KUBE_FEATURE_WatchListClient")))
	}

	if followMode {
		return follow(ctx, dyn, namespace, rec)
	}
	s := &scenario{ctx: ctx, dyn: dyn, res: dyn.Resource(llamas).Namespace(namespace), ns: namespace, rec: rec, logs: logs,
		name: fmt.Sprintf("clientgo-%d", time.Now().UnixNano()%1_000_000_000)}
	failed := 0
	for _, st := range s.steps() {
		mark, logMark := rec.mark(), len(logs.String())
		detail, err := st.run()
		r := result{Client: "client-go", Step: st.name, OK: err == nil, Detail: detail}
		if err != nil {
			failed++
			r.Error = err.Error()
			r.Requests = rec.since(mark)
			if l := logs.String()[logMark:]; l != "" {
				if r.Detail == nil {
					r.Detail = map[string]any{}
				}
				r.Detail["klog"] = l
			}
		}
		_ = out.Encode(r)
	}
	s.stopWatch()
	if failed > 0 {
		return 1
	}
	return 0
}
