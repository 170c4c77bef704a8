// Command clientgo-informer is the baseline for CAPTF's informer benchmark:
// the same measurement as bench/kube (RSS after syncing a CRD's objects, and
// watch events processed end to end: API server → informer → handler →
// workqueue → no-op reconcile), done by client-go the way a controller-runtime
// controller does it: typed objects, managedFields stripped, a rate-limited
// workqueue drained by workers.
//
//	clientgo-informer --kubeconfig K --namespace NS --expect N [--updates U] [--workers W]
//
// It prints one JSON line. With --updates it waits until U update events
// beyond the initial sync have been reconciled (another process makes them).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"

	kruntime "k8s.io/apimachinery/pkg/runtime"
)

var gv = schema.GroupVersion{Group: "bench.captf.io", Version: "v1"}

// BenchWidget is the benchmark CRD's typed object (bench/kube/crd.yaml).
type BenchWidget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              BenchWidgetSpec `json:"spec"`
}

type BenchWidgetSpec struct {
	Data map[string]string `json:"data,omitempty"`
}

type BenchWidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BenchWidget `json:"items"`
}

func (in *BenchWidget) DeepCopyObject() kruntime.Object {
	out := *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.Data = make(map[string]string, len(in.Spec.Data))
	for k, v := range in.Spec.Data {
		out.Spec.Data[k] = v
	}
	return &out
}

func (in *BenchWidgetList) DeepCopyObject() kruntime.Object {
	out := *in
	out.Items = make([]BenchWidget, len(in.Items))
	for i := range in.Items {
		out.Items[i] = *in.Items[i].DeepCopyObject().(*BenchWidget)
	}
	return &out
}

func rssBytes() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig")
	namespace := flag.String("namespace", "bench", "namespace of the objects")
	expect := flag.Int("expect", 0, "objects to expect after sync")
	updates := flag.Int64("updates", 0, "update events to wait for after sync")
	workers := flag.Int("workers", 2, "reconcile workers")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up after")
	readyFile := flag.String("ready-file", "", "touch this file once synced")
	mode := flag.String("mode", "informer", "informer, create (make --count objects) or update (--count updates)")
	count := flag.Int("count", 0, "objects to create or updates to make")
	flag.Parse()

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail(err)
	}
	scheme := kruntime.NewScheme()
	scheme.AddKnownTypes(gv, &BenchWidget{}, &BenchWidgetList{})
	metav1.AddToGroupVersion(scheme, gv)
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	cfg.QPS, cfg.Burst = -1, 0 // no client-side limit, as controller-runtime >= 0.21
	client, err := rest.RESTClientFor(cfg)
	if err != nil {
		fail(err)
	}
	if *mode != "informer" {
		load(client, *namespace, *mode, *count)
		return
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (kruntime.Object, error) {
			out := &BenchWidgetList{}
			err := client.Get().Namespace(*namespace).Resource("benchwidgets").
				VersionedParams(&o, metav1.ParameterCodec).Do(ctx).Into(out)
			return out, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.Watch = true
			return client.Get().Namespace(*namespace).Resource("benchwidgets").
				VersionedParams(&o, metav1.ParameterCodec).Watch(ctx)
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &BenchWidget{}, 0, cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	// Strip managedFields, as controller-runtime's cache can (and ours does).
	_ = inf.SetTransform(func(o any) (any, error) {
		if w, ok := o.(*BenchWidget); ok {
			w.ManagedFields = nil
		}
		return o, nil
	})
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	var reconciled atomic.Int64
	enqueue := func(o any) {
		if key, err := cache.MetaNamespaceKeyFunc(o); err == nil {
			queue.Add(key)
		}
	}
	var events atomic.Int64
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { events.Add(1); enqueue(o) },
		UpdateFunc: func(_, o any) { events.Add(1); enqueue(o) },
		DeleteFunc: func(o any) { events.Add(1); enqueue(o) },
	})
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	for i := 0; i < *workers; i++ {
		go func() {
			for {
				key, shutdown := queue.Get()
				if shutdown {
					return
				}
				if _, _, err := inf.GetIndexer().GetByKey(key); err == nil {
					reconciled.Add(1)
				}
				queue.Forget(key)
				queue.Done(key)
			}
		}()
	}
	start := time.Now()
	go inf.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		fail(fmt.Errorf("cache did not sync"))
	}
	for len(inf.GetStore().ListKeys()) < *expect && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	syncSecs := time.Since(start).Seconds()
	runtime.GC()
	debug.FreeOSMemory()
	synced := len(inf.GetStore().ListKeys())
	rss := rssBytes()
	if *readyFile != "" {
		_ = os.WriteFile(*readyFile, nil, 0o644)
	}
	res := map[string]any{"client": "client-go", "objects": synced, "sync_seconds": syncSecs,
		"rss_bytes": rss}
	if *updates > 0 {
		base := events.Load()
		cpu0 := cpuSeconds()
		var first time.Time
		for events.Load()-base < *updates && ctx.Err() == nil {
			if first.IsZero() && events.Load() > base {
				first = time.Now()
			}
			time.Sleep(time.Millisecond)
		}
		for queue.Len() > 0 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		secs := time.Since(first).Seconds()
		res["update_events"] = events.Load() - base
		res["update_seconds"] = secs
		res["events_per_second"] = float64(events.Load()-base) / secs
		res["cpu_seconds_per_1000_events"] = (cpuSeconds() - cpu0) * 1000 / float64(events.Load()-base)
	}
	queue.ShutDown()
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
}

// load creates COUNT objects with a ~2 KiB spec, or makes COUNT updates
// spread over the existing objects, with 16 concurrent requests.
func load(client *rest.RESTClient, ns, mode string, count int) {
	ctx := context.Background()
	jobs := make(chan int)
	errs := make(chan error, 16)
	var done atomic.Int64
	for w := 0; w < 16; w++ {
		go func() {
			for i := range jobs {
				name := fmt.Sprintf("w-%05d", i)
				obj := &BenchWidget{TypeMeta: metav1.TypeMeta{APIVersion: gv.String(), Kind: "BenchWidget"},
					ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: BenchWidgetSpec{Data: map[string]string{}}}
				for k := 0; k < 20; k++ {
					obj.Spec.Data[fmt.Sprintf("key-%02d", k)] = strings.Repeat(string(rune('a'+k)), 90)
				}
				var err error
				if mode == "create" {
					err = client.Post().Namespace(ns).Resource("benchwidgets").Body(obj).Do(ctx).Error()
				} else {
					patch := fmt.Sprintf(`{"spec":{"data":{"gen":"%d"}}}`, i)
					err = client.Patch("application/merge-patch+json").Namespace(ns).Resource("benchwidgets").
						Name(fmt.Sprintf("w-%05d", i%countObjects(client, ns))).Body([]byte(patch)).Do(ctx).Error()
				}
				if err != nil {
					errs <- err
					return
				}
				done.Add(1)
			}
			errs <- nil
		}()
	}
	for i := 0; i < count; i++ {
		jobs <- i
	}
	close(jobs)
	for w := 0; w < 16; w++ {
		if err := <-errs; err != nil {
			fail(err)
		}
	}
	fmt.Printf("{\"%s\": %d}\n", mode, done.Load())
}

var objectCount atomic.Int64

func countObjects(client *rest.RESTClient, ns string) int {
	if n := objectCount.Load(); n > 0 {
		return int(n)
	}
	list := &BenchWidgetList{}
	if err := client.Get().Namespace(ns).Resource("benchwidgets").Do(context.Background()).Into(list); err != nil {
		fail(err)
	}
	objectCount.Store(int64(max(len(list.Items), 1)))
	return int(objectCount.Load())
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "clientgo-informer: %v\n", err)
	os.Exit(1)
}
