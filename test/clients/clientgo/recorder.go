package main

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"sync"
)

// call is one HTTP request the program made, as seen on the wire (below client-go's retries and
// fallbacks): this is how a watch-list that silently fell back to a plain LIST is caught.
type call struct {
	Method      string `json:"method"`
	Path        string `json:"path"`
	Query       string `json:"query,omitempty"`
	ContentType string `json:"contentType,omitempty"`
	Status      int    `json:"status,omitempty"`
	// Body of an error response (status >= 400), so a failure shows what the server said.
	Body  string `json:"body,omitempty"`
	Error string `json:"error,omitempty"`
}

func (c call) param(name string) string {
	q, _ := url.ParseQuery(c.Query)
	return q.Get(name)
}

// isWatch: a GET with watch=true (client-go sends "true"; kube also accepts "1").
func (c call) isWatch() bool {
	w := c.param("watch")
	return c.Method == http.MethodGet && (w == "true" || w == "1")
}

// recorder is the log of calls; every transport client-go builds from the config writes to it.
type recorder struct {
	mu    sync.Mutex
	calls []call
}

func (r *recorder) wrap(next http.RoundTripper) http.RoundTripper {
	return &recordingTransport{next, r}
}

type recordingTransport struct {
	next http.RoundTripper
	log  *recorder
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := call{Method: req.Method, Path: req.URL.Path, Query: req.URL.RawQuery, ContentType: req.Header.Get("Content-Type")}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		c.Error = err.Error()
	} else {
		c.Status = resp.StatusCode
		if resp.StatusCode >= 400 {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			_ = resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(body))
			c.Body = string(body)
		}
	}
	t.log.mu.Lock()
	t.log.calls = append(t.log.calls, c)
	t.log.mu.Unlock()
	return resp, err
}

// mark returns a position in the log; since(mark) returns the calls made after it.
func (r *recorder) mark() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.calls) }

func (r *recorder) since(mark int) []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls[mark:]...)
}

// failedSince returns the calls after mark that got an error status or no response.
func (r *recorder) failedSince(mark int) []call {
	var out []call
	for _, c := range r.since(mark) {
		if c.Status >= 400 || c.Error != "" {
			out = append(out, c)
		}
	}
	return out
}

// syncBuffer collects klog's output (client-go reports a watch-list fallback only there).
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.buf.String() }
