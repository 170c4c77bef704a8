package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
)

const nodeName = "rig-node"

// Kubelet limits on termination messages (k8s docs, "Determine the Reason for
// Pod Failure"): 4096 bytes per container, 12 KiB per pod.
const (
	maxTermMsgContainer = 4096
	maxTermMsgPod       = 12 * 1024
	fallbackLogLines    = 80
	fallbackLogBytes    = 2048
)

// kubelet plays the node agent for Job pods: it binds pods to its one Node,
// pulls their images from the registry, materialises volumes and runs the
// containers as processes under bubblewrap, reporting status as a kubelet
// does. It finishes deletions (SIGTERM, grace period, SIGKILL, final delete).
type kubelet struct {
	ctx     context.Context
	client  kubernetes.Interface
	l       layout
	apiPort int
	bwrap   string
	images  *imageStore

	// Pod networks (network.go): the rig's pod IPs, and the host ports
	// forwarded into every pod network (the API server, the registry).
	subnet    *podSubnet
	hostPorts []int

	mu   sync.Mutex
	pods map[types.UID]*podWorker

	// The scheduler's view (see schedule): what each pod bound to the node
	// and not yet terminal requests, and the pods waiting for room, oldest
	// first.
	schedMu sync.Mutex
	charged map[types.UID]podRequests
	waiting []*corev1.Pod
}

// The Node's capacity, which is also its allocatable: what schedule fits
// pods into. 2 CPUs is the machine's; with the manager's default Job
// requests (250m CPU, 512Mi for the main container) 8 runner pods run at once.
var allocatable = podRequests{milliCPU: 2000, memory: 24 << 30, pods: 1000}

// podRequests is what a pod is charged against the node, as the scheduler
// computes it: per resource, the larger of the containers' sum and the
// largest init container, plus the pod overhead.
type podRequests struct {
	milliCPU, memory, pods int64
}

func requestsOf(pod *corev1.Pod) podRequests {
	r := podRequests{pods: 1}
	for _, c := range pod.Spec.Containers {
		r.milliCPU += c.Resources.Requests.Cpu().MilliValue()
		r.memory += c.Resources.Requests.Memory().Value()
	}
	for _, c := range pod.Spec.InitContainers {
		r.milliCPU = max(r.milliCPU, c.Resources.Requests.Cpu().MilliValue())
		r.memory = max(r.memory, c.Resources.Requests.Memory().Value())
	}
	r.milliCPU += pod.Spec.Overhead.Cpu().MilliValue()
	r.memory += pod.Spec.Overhead.Memory().Value()
	return r
}

func (a podRequests) plus(b podRequests) podRequests {
	return podRequests{a.milliCPU + b.milliCPU, a.memory + b.memory, a.pods + b.pods}
}

func (a podRequests) fitsIn(b podRequests) bool {
	return a.milliCPU <= b.milliCPU && a.memory <= b.memory && a.pods <= b.pods
}

// podWorker owns one pod's processes.
type podWorker struct {
	uid       types.UID
	dir       string
	deleting  chan struct{} // closed when the pod got a deletionTimestamp
	delOnce   sync.Once
	done      chan struct{} // closed when every process has exited
	mu        sync.Mutex
	procs     map[string]*exec.Cmd
	graceSecs int64
	net       *podNet // nil: the node's network
}

func startKubelet(ctx context.Context, l layout, p *pki, apiPort int, bwrap string, hostPorts []int) (*kubelet, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", l.p("kubeconfig"))
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 200, 400
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	k := &kubelet{ctx: ctx, client: cs, l: l, apiPort: apiPort, bwrap: bwrap,
		images: &imageStore{dir: l.p("images")}, pods: map[types.UID]*podWorker{},
		charged: map[types.UID]podRequests{}, subnet: newPodSubnet(apiPort), hostPorts: hostPorts}
	k.subnet.sweep(k.netnsPrefix())
	if err := k.registerNode(); err != nil {
		return nil, err
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	inf := factory.Core().V1().Pods().Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { k.sync(o.(*corev1.Pod)) },
		UpdateFunc: func(_, o any) { k.sync(o.(*corev1.Pod)) },
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if pod, ok := o.(*corev1.Pod); ok {
				k.forget(pod.UID)
			}
		},
	})
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("pod informer did not sync")
	}
	go k.heartbeat()
	return k, nil
}

func (k *kubelet) logf(format string, args ...any) {
	fmt.Printf("kubelet: "+format+"\n", args...)
}

func (k *kubelet) registerNode() error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{
			"kubernetes.io/hostname": nodeName, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}},
	}
	_, err := k.client.CoreV1().Nodes().Create(k.ctx, node, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return k.updateNodeStatus()
}

func (k *kubelet) updateNodeStatus() error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := k.client.CoreV1().Nodes().Get(k.ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		n.Status.Conditions = []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "the rig's process kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now,
		}}
		capacity := corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(allocatable.milliCPU, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(allocatable.memory, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(allocatable.pods, resource.DecimalSI),
		}
		n.Status.Capacity, n.Status.Allocatable = capacity, capacity
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
			{Type: corev1.NodeHostName, Address: nodeName}}
		_, err = k.client.CoreV1().Nodes().UpdateStatus(k.ctx, n, metav1.UpdateOptions{})
		return err
	})
}

func (k *kubelet) heartbeat() {
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-k.ctx.Done():
			return
		case <-t.C:
			_ = k.updateNodeStatus()
		}
	}
}

// nodeLostAnnotation on a pod makes this kubelet behave, for that pod, as a
// node the API server cannot reach: its deletion never stops its processes.
// The fault tests set it before `kubectl delete pod --force
// --grace-period=0` to leave a runner running without its pod object.
const nodeLostAnnotation = "rig.captf.io/node-lost"

// sync is called for every pod event. It queues for binding, starts or
// deletes.
func (k *kubelet) sync(pod *corev1.Pod) {
	if pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil {
		if pod.Spec.SchedulerName == "" || pod.Spec.SchedulerName == corev1.DefaultSchedulerName {
			k.enqueue(pod)
		}
		return
	}
	if pod.Spec.NodeName != nodeName {
		return
	}
	terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	if terminal {
		k.forget(pod.UID)
	} else {
		k.charge(pod)
	}
	k.mu.Lock()
	w := k.pods[pod.UID]
	if w == nil && pod.DeletionTimestamp == nil && !terminal {
		w = &podWorker{uid: pod.UID, deleting: make(chan struct{}), done: make(chan struct{}),
			procs: map[string]*exec.Cmd{},
			dir:   k.l.p("pods", fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))}
		k.pods[pod.UID] = w
		go k.run(w, pod.DeepCopy())
	}
	k.mu.Unlock()
	if pod.DeletionTimestamp != nil && pod.Annotations[nodeLostAnnotation] == "true" {
		// As on a node that cannot be reached: nothing here hears of the
		// deletion, so the pod's processes run on (a force delete removes
		// the pod object without us).
		return
	}
	if pod.DeletionTimestamp != nil {
		if w == nil {
			// Never started, or finished: nothing runs, so finish the delete.
			go k.finalizeDelete(pod)
			return
		}
		w.delOnce.Do(func() {
			if pod.DeletionGracePeriodSeconds != nil {
				w.graceSecs = *pod.DeletionGracePeriodSeconds
			}
			close(w.deleting)
			go func() { k.terminate(w); <-w.done; k.finalizeDelete(pod) }()
		})
	}
}

// enqueue adds an unbound pod to the waiting pods (once) and schedules.
func (k *kubelet) enqueue(pod *corev1.Pod) {
	k.schedMu.Lock()
	_, bound := k.charged[pod.UID]
	queued := false
	for _, p := range k.waiting {
		queued = queued || p.UID == pod.UID
	}
	if !bound && !queued {
		k.waiting = append(k.waiting, pod.DeepCopy())
	}
	k.schedMu.Unlock()
	k.schedule()
}

// charge counts a pod found bound to the node (bound here, or by its
// creator through spec.nodeName) until it is terminal or gone.
func (k *kubelet) charge(pod *corev1.Pod) {
	k.schedMu.Lock()
	defer k.schedMu.Unlock()
	if _, ok := k.charged[pod.UID]; !ok {
		k.charged[pod.UID] = requestsOf(pod)
	}
}

// forget frees what a terminal or deleted pod was charged (or drops it from
// the waiting pods) and schedules.
func (k *kubelet) forget(uid types.UID) {
	k.schedMu.Lock()
	_, bound := k.charged[uid]
	delete(k.charged, uid)
	for i, p := range k.waiting {
		if p.UID == uid {
			k.waiting = append(k.waiting[:i], k.waiting[i+1:]...)
			break
		}
	}
	k.schedMu.Unlock()
	if bound {
		k.schedule()
	}
}

// schedule is the scheduler's fit check: it binds, oldest first, every
// waiting pod whose requests fit in what the charged pods leave of the
// node's allocatable; the others stay Pending until a pod finishes. A pod
// that does not fit does not hold back smaller ones behind it.
func (k *kubelet) schedule() {
	k.schedMu.Lock()
	var used podRequests
	for _, r := range k.charged {
		used = used.plus(r)
	}
	var fit []*corev1.Pod
	rest := k.waiting[:0]
	for _, p := range k.waiting {
		r := requestsOf(p)
		if used.plus(r).fitsIn(allocatable) {
			used = used.plus(r)
			k.charged[p.UID] = r
			fit = append(fit, p)
		} else {
			rest = append(rest, p)
		}
	}
	k.waiting = rest
	k.schedMu.Unlock()
	for _, p := range fit {
		k.bind(p)
	}
}

func (k *kubelet) bind(pod *corev1.Pod) {
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target: corev1.ObjectReference{Kind: "Node", Name: nodeName}}
	err := k.client.CoreV1().Pods(pod.Namespace).Bind(k.ctx, b, metav1.CreateOptions{})
	switch {
	case err == nil || apierrors.IsConflict(err):
	case apierrors.IsNotFound(err):
		k.forget(pod.UID)
	default:
		// Try again in a second, as the scheduler's backoff would.
		k.logf("binding %s/%s: %v", pod.Namespace, pod.Name, err)
		k.schedMu.Lock()
		delete(k.charged, pod.UID)
		k.waiting = append(k.waiting, pod)
		k.schedMu.Unlock()
		time.AfterFunc(time.Second, k.schedule)
	}
}

// terminate sends SIGTERM to every process group, then SIGKILL after the
// grace period.
func (k *kubelet) terminate(w *podWorker) {
	w.signal(syscall.SIGTERM)
	grace := time.Duration(w.graceSecs) * time.Second
	select {
	case <-w.done:
	case <-time.After(grace):
		w.signal(syscall.SIGKILL)
	}
}

func (w *podWorker) signal(sig syscall.Signal) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.procs {
		if c.Process != nil {
			_ = syscall.Kill(-c.Process.Pid, sig)
		}
	}
}

func (k *kubelet) finalizeDelete(pod *corev1.Pod) {
	zero := int64(0)
	uid := pod.UID
	err := k.client.CoreV1().Pods(pod.Namespace).Delete(k.ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		k.logf("deleting %s/%s: %v", pod.Namespace, pod.Name, err)
		return
	}
	k.mu.Lock()
	w := k.pods[uid]
	delete(k.pods, uid)
	k.mu.Unlock()
	if w != nil {
		os.RemoveAll(filepath.Join(w.dir, "volumes"))
		os.RemoveAll(filepath.Join(w.dir, "rootfs"))
	}
}

// shutdown kills every pod process; the rig is going away.
func (k *kubelet) shutdown() {
	k.mu.Lock()
	ws := make([]*podWorker, 0, len(k.pods))
	for _, w := range k.pods {
		ws = append(ws, w)
	}
	k.mu.Unlock()
	for _, w := range ws {
		w.signal(syscall.SIGKILL)
	}
	for _, w := range ws {
		select {
		case <-w.done:
		case <-time.After(10 * time.Second):
		}
	}
}

// updateStatus applies mutate to a fresh copy of the pod's status.
func (k *kubelet) updateStatus(pod *corev1.Pod, mutate func(*corev1.PodStatus)) {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := k.client.CoreV1().Pods(pod.Namespace).Get(k.ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != pod.UID {
			return apierrors.NewNotFound(corev1.Resource("pods"), pod.Name)
		}
		mutate(&cur.Status)
		_, err = k.client.CoreV1().Pods(pod.Namespace).UpdateStatus(k.ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) && k.ctx.Err() == nil {
		k.logf("status of %s/%s: %v", pod.Namespace, pod.Name, err)
	}
}

func setCondition(st *corev1.PodStatus, t corev1.PodConditionType, ok bool, reason string) {
	s := corev1.ConditionFalse
	if ok {
		s = corev1.ConditionTrue
	}
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			if st.Conditions[i].Status != s {
				st.Conditions[i].LastTransitionTime = metav1.Now()
			}
			st.Conditions[i].Status, st.Conditions[i].Reason = s, reason
			return
		}
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: s, Reason: reason,
		LastTransitionTime: metav1.Now()})
}

// run is a pod's life: pull, volumes, init containers one by one, then the
// containers together, then the terminal phase.
func (k *kubelet) run(w *podWorker, pod *corev1.Pod) {
	defer close(w.done)
	start := metav1.Now()
	k.updateStatus(pod, func(st *corev1.PodStatus) {
		st.Phase = corev1.PodPending
		st.HostIP, st.PodIP = "127.0.0.1", "127.0.0.1"
		st.HostIPs, st.PodIPs = []corev1.HostIP{{IP: "127.0.0.1"}}, []corev1.PodIP{{IP: "127.0.0.1"}}
		if st.StartTime == nil {
			st.StartTime = &start
		}
		setCondition(st, corev1.PodScheduled, true, "")
		setCondition(st, corev1.PodInitialized, len(pod.Spec.InitContainers) == 0, "")
		setCondition(st, corev1.ContainersReady, false, "ContainersNotReady")
		setCondition(st, corev1.PodReady, false, "ContainersNotReady")
	})
	ctx, cancel := context.WithCancel(k.ctx)
	defer cancel()
	// activeDeadlineSeconds counts from the pod's start time.
	deadlineHit := make(chan struct{})
	if d := pod.Spec.ActiveDeadlineSeconds; d != nil {
		timer := time.AfterFunc(time.Until(start.Add(time.Duration(*d)*time.Second)), func() {
			close(deadlineHit)
			w.signal(syscall.SIGKILL)
			cancel()
		})
		defer timer.Stop()
	}
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		k.fail(pod, "RigError", err.Error())
		return
	}
	imgs, ok := k.pullAll(ctx, w, pod)
	if !ok {
		k.finishDeadline(pod, deadlineHit)
		return
	}
	vols, err := k.materialise(ctx, w, pod)
	if err != nil {
		k.logf("volumes of %s/%s: %v", pod.Namespace, pod.Name, err)
		k.updateStatus(pod, func(st *corev1.PodStatus) {
			st.Message = "volumes: " + err.Error()
			st.Reason = "ContainerCreating"
		})
		// A real kubelet retries; a missing Secret is the usual cause.
		for err != nil && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-w.deleting:
				cancel()
			case <-time.After(2 * time.Second):
				vols, err = k.materialise(ctx, w, pod)
			}
		}
		if err != nil {
			k.finishDeadline(pod, deadlineHit)
			return
		}
	}
	if needsNetwork(pod) {
		n, err := openPodNet(k.subnet, k.netnsPrefix()+string(pod.UID)[:8], pod, k.hostPorts)
		if err != nil {
			k.logf("network of %s/%s: %v", pod.Namespace, pod.Name, err)
			k.fail(pod, "NetworkError", err.Error())
			return
		}
		defer n.close()
		w.net = n
		k.updateStatus(pod, func(st *corev1.PodStatus) {
			st.PodIP, st.PodIPs = n.ip, []corev1.PodIP{{IP: n.ip}}
		})
	}
	env := k.baseEnv()
	// Init containers, in order; any failure fails the pod (restartPolicy
	// Never, which is what Jobs built by CAPTF use).
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		st := k.runContainer(ctx, w, pod, c, imgs[c.Image], vols, env, true)
		k.updateStatus(pod, func(s *corev1.PodStatus) { putStatus(&s.InitContainerStatuses, st) })
		if st.State.Terminated == nil || st.State.Terminated.ExitCode != 0 {
			k.finishDeadline(pod, deadlineHit)
			if !closed(deadlineHit) {
				k.updateStatus(pod, func(s *corev1.PodStatus) { s.Phase = corev1.PodFailed })
			}
			return
		}
	}
	k.updateStatus(pod, func(s *corev1.PodStatus) { setCondition(s, corev1.PodInitialized, true, "") })
	var wg sync.WaitGroup
	results := make([]corev1.ContainerStatus, len(pod.Spec.Containers))
	for i := range pod.Spec.Containers {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := &pod.Spec.Containers[i]
			for attempt := int32(0); ; attempt++ {
				results[i] = k.runContainer(ctx, w, pod, c, imgs[c.Image], vols, env, false)
				results[i].RestartCount = attempt
				t := results[i].State.Terminated
				failed := t == nil || t.ExitCode != 0
				restart := pod.Spec.RestartPolicy == corev1.RestartPolicyAlways ||
					(pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure && failed)
				if !restart || ctx.Err() != nil || closed(w.deleting) {
					return
				}
				k.updateStatus(pod, func(s *corev1.PodStatus) { putStatus(&s.ContainerStatuses, results[i]) })
				time.Sleep(time.Duration(min(1<<attempt, 10)) * time.Second)
			}
		}(i)
	}
	wg.Wait()
	if k.finishDeadline(pod, deadlineHit) {
		return
	}
	phase := corev1.PodSucceeded
	for _, r := range results {
		if r.State.Terminated == nil || r.State.Terminated.ExitCode != 0 {
			phase = corev1.PodFailed
		}
	}
	capPodMessages(results)
	k.updateStatus(pod, func(s *corev1.PodStatus) {
		for _, r := range results {
			putStatus(&s.ContainerStatuses, r)
		}
		s.Phase = phase
		setCondition(s, corev1.ContainersReady, false, "PodCompleted")
		setCondition(s, corev1.PodReady, false, "PodCompleted")
	})
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// finishDeadline marks the pod Failed/DeadlineExceeded when its
// activeDeadlineSeconds passed, and reports whether it did.
func (k *kubelet) finishDeadline(pod *corev1.Pod, hit chan struct{}) bool {
	if !closed(hit) {
		return false
	}
	k.updateStatus(pod, func(s *corev1.PodStatus) {
		s.Phase = corev1.PodFailed
		s.Reason = "DeadlineExceeded"
		s.Message = "Pod was active on the node longer than the specified deadline"
	})
	return true
}

func (k *kubelet) fail(pod *corev1.Pod, reason, msg string) {
	k.updateStatus(pod, func(s *corev1.PodStatus) { s.Phase, s.Reason, s.Message = corev1.PodFailed, reason, msg })
}

// pullAll pulls every image of the pod, retrying until it works, the pod is
// deleted or its deadline passes. As a real kubelet does, a failed pull shows
// as ErrImagePull and the wait before the next as ImagePullBackOff; the
// back-off doubles from 1 s to at most 10 s (a real kubelet's runs from 10 s
// to 5 min), so a registry that comes back is pulled from within 10 s.
func (k *kubelet) pullAll(ctx context.Context, w *podWorker, pod *corev1.Pod) (map[string]*pulled, bool) {
	imgs := map[string]*pulled{}
	all := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, c := range all {
		if imgs[c.Image] != nil {
			continue
		}
		isInit := false
		for _, ic := range pod.Spec.InitContainers {
			isInit = isInit || ic.Name == c.Name
		}
		waiting := func(reason, msg string) {
			st := corev1.ContainerStatus{Name: c.Name, Image: c.Image, State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
			k.updateStatus(pod, func(s *corev1.PodStatus) {
				if isInit {
					putStatus(&s.InitContainerStatuses, st)
				} else {
					putStatus(&s.ContainerStatuses, st)
				}
			})
		}
		for backoff := time.Second; ; backoff = min(backoff*2, 10*time.Second) {
			img, err := k.images.pullPolicy(c.Image, c.ImagePullPolicy)
			if err == nil {
				imgs[c.Image] = img
				break
			}
			k.logf("%s/%s: %v", pod.Namespace, pod.Name, err)
			waiting("ErrImagePull", err.Error())
			// Half the wait as ErrImagePull, the other half as
			// ImagePullBackOff.
			for i, reason := range []string{"", "ImagePullBackOff"} {
				if i > 0 {
					waiting(reason, fmt.Sprintf("Back-off pulling image %q: ErrImagePull: %v", c.Image, err))
				}
				select {
				case <-ctx.Done():
					return nil, false
				case <-w.deleting:
					return nil, false
				case <-time.After(backoff / 2):
				}
			}
		}
	}
	return imgs, true
}

func putStatus(list *[]corev1.ContainerStatus, st corev1.ContainerStatus) {
	for i := range *list {
		if (*list)[i].Name == st.Name {
			(*list)[i] = st
			return
		}
	}
	*list = append(*list, st)
}

// capPodMessages splits the 12 KiB pod budget evenly when the containers'
// messages together exceed it.
func capPodMessages(sts []corev1.ContainerStatus) {
	total := 0
	for _, s := range sts {
		if t := s.State.Terminated; t != nil {
			total += len(t.Message)
		}
	}
	if total <= maxTermMsgPod || len(sts) == 0 {
		return
	}
	each := maxTermMsgPod / len(sts)
	for i := range sts {
		if t := sts[i].State.Terminated; t != nil && len(t.Message) > each {
			t.Message = t.Message[:each]
		}
	}
}

// netnsPrefix names this rig's network namespaces.
func (k *kubelet) netnsPrefix() string { return fmt.Sprintf("captf-rig-%d-", k.apiPort) }

func (k *kubelet) baseEnv() []string {
	port := strconv.Itoa(k.apiPort)
	return []string{
		"KUBERNETES_SERVICE_HOST=127.0.0.1", "KUBERNETES_SERVICE_PORT=" + port,
		"KUBERNETES_SERVICE_PORT_HTTPS=" + port, "KUBERNETES_PORT=tcp://127.0.0.1:" + port,
	}
}
