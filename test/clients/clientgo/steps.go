package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

type step struct {
	name string
	run  func() (map[string]any, error)
}

// scenario is one Llama's life: each step uses what the earlier ones left.
type scenario struct {
	ctx      context.Context
	dyn      dynamic.Interface
	res      dynamic.ResourceInterface
	ns, name string
	rec      *recorder
	logs     *syncBuffer

	listRV  string
	watcher watch.Interface
	// current is the object as the last successful write returned it; stale is the one before.
	current, stale *unstructured.Unstructured
	deletedRV      string
}

var errNoObject = errors.New("no object to work on (the create step failed)")

func (s *scenario) steps() []step {
	return []step{
		{"list", s.list},
		{"watch", s.startWatch},
		{"create", s.create},
		{"watch-added", func() (map[string]any, error) { return s.expectEvent(watch.Added) }},
		{"get", s.get},
		{"replace", s.replace},
		{"watch-modified", func() (map[string]any, error) { return s.expectEvent(watch.Modified) }},
		{"replace-stale-conflict", s.replaceStale},
		{"list-contains", s.listContains},
		{"watchlist-list", s.watchListList},
		{"watchlist-informer", s.watchListInformer},
		{"delete", s.delete},
		{"watch-deleted", func() (map[string]any, error) { return s.expectEvent(watch.Deleted) }},
		{"get-after-delete", s.getAfterDelete},
	}
}

func (s *scenario) collectionPath() string {
	return fmt.Sprintf("/apis/%s/%s/namespaces/%s/%s", llamas.Group, llamas.Version, s.ns, llamas.Resource)
}

// collectionGets splits the GETs of the llama collection made since mark into watches and plain lists.
func (s *scenario) collectionGets(mark int) (watches, lists []call) {
	for _, c := range s.rec.since(mark) {
		if c.Method != "GET" || c.Path != s.collectionPath() {
			continue
		}
		if c.isWatch() {
			watches = append(watches, c)
		} else {
			lists = append(lists, c)
		}
	}
	return watches, lists
}

// statusOf returns the status of the last request since mark with this method and path.
func (s *scenario) statusOf(mark int, method, path string) int {
	st := 0
	for _, c := range s.rec.since(mark) {
		if c.Method == method && c.Path == path {
			st = c.Status
		}
	}
	return st
}

func (s *scenario) list() (map[string]any, error) {
	mark := s.rec.mark()
	// Limit > 0 with resourceVersion "" makes client-go skip watch-list: a plain LIST.
	l, err := s.res.List(s.ctx, metav1.ListOptions{Limit: 100})
	if err != nil {
		return nil, err
	}
	watches, lists := s.collectionGets(mark)
	if len(lists) != 1 || len(watches) != 0 {
		return nil, fmt.Errorf("expected exactly one plain LIST request, got lists=%v watches=%v", lists, watches)
	}
	if l.GetKind() != "LlamaList" || l.GetAPIVersion() != "farm.example.com/v1alpha" {
		return nil, fmt.Errorf("list is %s %s, want farm.example.com/v1alpha LlamaList", l.GetAPIVersion(), l.GetKind())
	}
	if l.GetResourceVersion() == "" {
		return nil, errors.New("list has no metadata.resourceVersion")
	}
	s.listRV = l.GetResourceVersion()
	return map[string]any{"resourceVersion": s.listRV, "items": len(l.Items)}, nil
}

func (s *scenario) startWatch() (map[string]any, error) {
	if s.listRV == "" {
		return nil, errors.New("no resourceVersion to watch from (the list step failed)")
	}
	w, err := s.res.Watch(s.ctx, metav1.ListOptions{ResourceVersion: s.listRV, AllowWatchBookmarks: true})
	if err != nil {
		return nil, err
	}
	s.watcher = w
	return map[string]any{"fromResourceVersion": s.listRV}, nil
}

func (s *scenario) stopWatch() {
	if s.watcher != nil {
		s.watcher.Stop()
	}
}

// expectEvent waits for the next event about our Llama, skipping BOOKMARKs; it must be of type want
// and carry the resourceVersion of the write that caused it (for DELETED: a newer one).
func (s *scenario) expectEvent(want watch.EventType) (map[string]any, error) {
	if s.watcher == nil {
		return nil, errors.New("no watch open (the watch step failed)")
	}
	if s.current == nil {
		return nil, errNoObject
	}
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return nil, s.ctx.Err()
		case <-timer.C:
			return nil, fmt.Errorf("no %s event within 10s", want)
		case ev, ok := <-s.watcher.ResultChan():
			if !ok {
				return nil, fmt.Errorf("watch closed before the %s event", want)
			}
			if ev.Type == watch.Bookmark {
				continue
			}
			if ev.Type == watch.Error {
				return nil, fmt.Errorf("ERROR event: %w", apierrors.FromObject(ev.Object))
			}
			u, isU := ev.Object.(*unstructured.Unstructured)
			if !isU {
				return nil, fmt.Errorf("%s event with a %T", ev.Type, ev.Object)
			}
			if u.GetName() != s.name {
				continue
			}
			if ev.Type != want {
				return nil, fmt.Errorf("got a %s event (resourceVersion %s), want %s", ev.Type, u.GetResourceVersion(), want)
			}
			if u.GetUID() != s.current.GetUID() {
				return nil, fmt.Errorf("%s event for uid %s, want %s", want, u.GetUID(), s.current.GetUID())
			}
			rv := u.GetResourceVersion()
			if want == watch.Deleted {
				if rv == "" || rv == s.current.GetResourceVersion() {
					return nil, fmt.Errorf("DELETED event has resourceVersion %q, want the deletion's (newer than %s)", rv, s.current.GetResourceVersion())
				}
				s.deletedRV = rv
			} else if rv != s.current.GetResourceVersion() {
				return nil, fmt.Errorf("%s event has resourceVersion %s, the write returned %s", want, rv, s.current.GetResourceVersion())
			}
			return map[string]any{"type": string(ev.Type), "resourceVersion": rv}, nil
		}
	}
}

func (s *scenario) create() (map[string]any, error) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "farm.example.com/v1alpha", "kind": "Llama",
		"metadata": map[string]any{"name": s.name, "labels": map[string]any{"client": "client-go"}},
		"spec":     map[string]any{"weight": int64(120), "height": 1.7, "color": "brown"},
	}}
	mark := s.rec.mark()
	got, err := s.res.Create(s.ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	if st := s.statusOf(mark, "POST", s.collectionPath()); st != 201 {
		return nil, fmt.Errorf("POST answered %d, want 201 Created", st)
	}
	if got.GetName() != s.name || got.GetNamespace() != s.ns || got.GetUID() == "" || got.GetResourceVersion() == "" || got.GetCreationTimestamp().Time.IsZero() {
		return nil, fmt.Errorf("created object metadata incomplete: %v", got.Object["metadata"])
	}
	color, _, _ := unstructured.NestedString(got.Object, "spec", "color")
	shorn, found, _ := unstructured.NestedBool(got.Object, "spec", "shorn")
	if color != "brown" || !found || shorn {
		return nil, fmt.Errorf("created spec is %v, want color brown and the default shorn=false", got.Object["spec"])
	}
	s.current = got
	return map[string]any{"name": got.GetName(), "uid": string(got.GetUID()), "resourceVersion": got.GetResourceVersion()}, nil
}

func (s *scenario) get() (map[string]any, error) {
	if s.current == nil {
		return nil, errNoObject
	}
	got, err := s.res.Get(s.ctx, s.name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if got.GetUID() != s.current.GetUID() || got.GetResourceVersion() != s.current.GetResourceVersion() {
		return nil, fmt.Errorf("get returned uid %s rv %s, created uid %s rv %s", got.GetUID(), got.GetResourceVersion(), s.current.GetUID(), s.current.GetResourceVersion())
	}
	return map[string]any{"resourceVersion": got.GetResourceVersion()}, nil
}

func (s *scenario) replace() (map[string]any, error) {
	if s.current == nil {
		return nil, errNoObject
	}
	upd := s.current.DeepCopy()
	if err := unstructured.SetNestedField(upd.Object, "black", "spec", "color"); err != nil {
		return nil, err
	}
	mark := s.rec.mark()
	got, err := s.res.Update(s.ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	if st := s.statusOf(mark, "PUT", s.collectionPath()+"/"+s.name); st != 200 {
		return nil, fmt.Errorf("PUT answered %d, want 200", st)
	}
	color, _, _ := unstructured.NestedString(got.Object, "spec", "color")
	switch {
	case color != "black":
		return nil, fmt.Errorf("replaced spec is %v, want color black", got.Object["spec"])
	case got.GetUID() != s.current.GetUID():
		return nil, fmt.Errorf("uid changed on replace: %s -> %s", s.current.GetUID(), got.GetUID())
	case got.GetResourceVersion() == "" || got.GetResourceVersion() == s.current.GetResourceVersion():
		return nil, fmt.Errorf("resourceVersion %q after replace, was %s", got.GetResourceVersion(), s.current.GetResourceVersion())
	case got.GetGeneration() != s.current.GetGeneration()+1:
		return nil, fmt.Errorf("generation %d after a spec change, was %d", got.GetGeneration(), s.current.GetGeneration())
	}
	s.stale, s.current = s.current, got
	return map[string]any{"resourceVersion": got.GetResourceVersion(), "generation": got.GetGeneration()}, nil
}

func (s *scenario) replaceStale() (map[string]any, error) {
	if s.stale == nil {
		return nil, errors.New("no stale object (the replace step failed)")
	}
	upd := s.stale.DeepCopy()
	if err := unstructured.SetNestedField(upd.Object, "grey", "spec", "color"); err != nil {
		return nil, err
	}
	_, err := s.res.Update(s.ctx, upd, metav1.UpdateOptions{})
	if err == nil {
		return nil, fmt.Errorf("a replace with the stale resourceVersion %s was accepted", s.stale.GetResourceVersion())
	}
	if !apierrors.IsConflict(err) {
		return nil, fmt.Errorf("want 409 Conflict, got: %w", err)
	}
	return map[string]any{"status": 409}, nil
}

func (s *scenario) listContains() (map[string]any, error) {
	if s.current == nil {
		return nil, errNoObject
	}
	l, err := s.res.List(s.ctx, metav1.ListOptions{Limit: 100})
	if err != nil {
		return nil, err
	}
	return s.checkItems(l.Items, l.GetResourceVersion())
}

func (s *scenario) checkItems(items []unstructured.Unstructured, listRV string) (map[string]any, error) {
	if listRV == "" {
		return nil, errors.New("list has no metadata.resourceVersion")
	}
	for _, it := range items {
		if it.GetName() == s.name {
			if it.GetResourceVersion() != s.current.GetResourceVersion() {
				return nil, fmt.Errorf("listed %s at resourceVersion %s, want %s", s.name, it.GetResourceVersion(), s.current.GetResourceVersion())
			}
			return map[string]any{"resourceVersion": listRV, "items": len(items)}, nil
		}
	}
	return nil, fmt.Errorf("%s missing from the %d listed items", s.name, len(items))
}

// fallback returns client-go's "falling back" log lines written since logMark (how client-go v0.33
// signals that a watch-list request failed: dynamic List() logs a Warning, a Reflector an Error).
func (s *scenario) fallback(logMark int) string {
	var out []string
	for _, l := range strings.Split(s.logs.String()[logMark:], "\n") {
		if strings.Contains(l, "falling back to the standard LIST") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// checkWatchListRequests: the watch-list path must make a watch=true&sendInitialEvents=true request
// and no plain LIST; anything else means client-go fell back.
func (s *scenario) checkWatchListRequests(mark, logMark int) ([]string, error) {
	watches, lists := s.collectionGets(mark)
	var seen []string
	for _, c := range append(watches, lists...) {
		seen = append(seen, fmt.Sprintf("GET ?%s -> %d", c.Query, c.Status))
	}
	if len(lists) > 0 || s.fallback(logMark) != "" {
		return seen, fmt.Errorf("client-go fell back from watch-list to a plain LIST (%d plain LIST requests); client-go said: %s", len(lists), s.fallback(logMark))
	}
	if len(watches) == 0 {
		return seen, errors.New("no watch-list request was made")
	}
	for _, w := range watches {
		if w.param("sendInitialEvents") != "true" || w.param("allowWatchBookmarks") != "true" || w.param("resourceVersionMatch") != "NotOlderThan" {
			return seen, fmt.Errorf("watch request is not a watch-list request: ?%s", w.Query)
		}
	}
	return seen, nil
}

func (s *scenario) watchListList() (map[string]any, error) {
	if s.current == nil {
		return nil, errNoObject
	}
	mark, logMark := s.rec.mark(), len(s.logs.String())
	// No limit, no resourceVersion: with WatchListClient on, client-go serves this List() from a
	// watch with sendInitialEvents=true (dynamic/simple.go), and falls back to LIST on any error.
	l, err := s.res.List(s.ctx, metav1.ListOptions{})
	seen, reqErr := s.checkWatchListRequests(mark, logMark)
	detail := map[string]any{"requests": seen}
	if reqErr != nil {
		return detail, reqErr
	}
	if err != nil {
		return detail, err
	}
	if l.GetKind() != "LlamaList" || l.GetAPIVersion() != "farm.example.com/v1alpha" {
		return detail, fmt.Errorf("the list decoded from the blueprint is %q %q, want farm.example.com/v1alpha LlamaList", l.GetAPIVersion(), l.GetKind())
	}
	res, err := s.checkItems(l.Items, l.GetResourceVersion())
	for k, v := range res {
		detail[k] = v
	}
	return detail, err
}

func (s *scenario) watchListInformer() (map[string]any, error) {
	if s.current == nil {
		return nil, errNoObject
	}
	mark, logMark := s.rec.mark(), len(s.logs.String())
	// A Reflector's UseWatchList defaults to the WatchListClient feature (tools/cache/reflector.go).
	inf := dynamicinformer.NewFilteredDynamicInformer(s.dyn, llamas, s.ns, 0, cache.Indexers{}, nil).Informer()
	stop := make(chan struct{})
	go inf.Run(stop)
	syncCtx, cancel := context.WithTimeout(s.ctx, 15*time.Second)
	synced := cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced)
	cancel()
	close(stop)
	seen, reqErr := s.checkWatchListRequests(mark, logMark)
	detail := map[string]any{"requests": seen}
	if reqErr != nil {
		return detail, reqErr
	}
	if !synced {
		return detail, errors.New("informer did not sync within 15s")
	}
	item, exists, err := inf.GetStore().GetByKey(s.ns + "/" + s.name)
	if err != nil || !exists {
		return detail, fmt.Errorf("%s/%s missing from the informer's store (err %v)", s.ns, s.name, err)
	}
	if rv := item.(*unstructured.Unstructured).GetResourceVersion(); rv != s.current.GetResourceVersion() {
		return detail, fmt.Errorf("informer has resourceVersion %s, want %s", rv, s.current.GetResourceVersion())
	}
	detail["lastSyncResourceVersion"] = inf.LastSyncResourceVersion()
	return detail, nil
}

func (s *scenario) delete() (map[string]any, error) {
	if s.current == nil {
		return nil, errNoObject
	}
	uid := types.UID(s.current.GetUID())
	if err := s.res.Delete(s.ctx, s.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		return nil, err
	}
	return map[string]any{"uid": string(uid)}, nil
}

func (s *scenario) getAfterDelete() (map[string]any, error) {
	if s.current == nil {
		return nil, errNoObject
	}
	_, err := s.res.Get(s.ctx, s.name, metav1.GetOptions{})
	if err == nil {
		return nil, fmt.Errorf("%s still exists after delete", s.name)
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("want 404 NotFound, got: %w", err)
	}
	return map[string]any{"status": 404}, nil
}
