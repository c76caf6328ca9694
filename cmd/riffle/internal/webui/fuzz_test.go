package webui

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/riffle-net/riffle/node/client"
)

// FuzzRequests sends arbitrary requests to a UI over a fake client: none
// may fail with a 5xx or panic, and none without the token may start a job.
func FuzzRequests(f *testing.F) {
	f.Add("GET", "/", "", "", false)
	f.Add("GET", "/?q=%00%ff&sort=name&order=asc", "", "", false)
	f.Add("GET", "/file/"+fileID("a").String(), "", "", false)
	f.Add("POST", "/get", "application/x-www-form-urlencoded", "link=riffle:"+fileID("a").String(), true)
	f.Add("POST", "/api/get", "application/x-www-form-urlencoded", "link=riffle:%ff%00", false)
	f.Add("POST", "/share", "multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nabc\r\n--x--\r\n", false)
	f.Add("POST", "/share", "multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n"+testToken+"\r\n--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"<a>\"\r\n\r\nabc\r\n--x--\r\n", false)
	f.Add("GET", "/jobs/../../etc/passwd/file", "", "", false)
	f.Fuzz(func(t *testing.T, method, path, ctype, body string, token bool) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \r\n\t") || len(method) == 0 || strings.ContainsAny(method, " \r\n\t()<>@,;:\\\"/[]?={}") {
			return
		}
		fc := newFake()
		u := newTestUI(t, fc, nil)
		r := httptest.NewRequest("GET", "/", strings.NewReader(body))
		r.Method = method
		r.URL.Path = path
		if i := strings.IndexByte(path, '?'); i >= 0 {
			r.URL.Path, r.URL.RawQuery = path[:i], path[i+1:]
		}
		r.Host = testAddr
		if ctype != "" {
			r.Header.Set("Content-Type", ctype)
		}
		if token {
			r.Header.Set("X-Riffle-Token", testToken)
		}
		w := httptest.NewRecorder()
		u.ServeHTTP(w, r)
		if w.Code >= 500 {
			t.Fatalf("%s %s: %d %q", method, path, w.Code, w.Body.String())
		}
		withToken := token || strings.Contains(body, testToken)
		if s, g := fc.counts(); !withToken && s+g > 0 {
			t.Fatalf("%s %s without the token ran %d shares and %d gets", method, path, s, g)
		}
	})
}

// FuzzDecodeEvents: a running client's event stream decodes without a
// panic; every event passed on has a phase, re-encodes and decodes to
// itself, and a line over the bound ends the stream with an error.
func FuzzDecodeEvents(f *testing.F) {
	f.Add([]byte(`{"job":"1","kind":"share","phase":"started"}` + "\n" + `{"kind":"share","phase":"moving","name":"a","done":3,"total":10,"round":7,"rate_bytes_per_s":1024,"eta_ns":9000000000}` + "\n"))
	f.Add([]byte(`{"kind":"get","phase":"failed","error":"x"}` + "\n\n" + `{"phase":"done","path":"/p"}`))
	f.Add([]byte(`{"phase":"waiting"} {"phase":"waiting"}` + "\n"))
	f.Add([]byte(`{"phase":""}`))
	f.Add([]byte(`{"done":1e400,"phase":"moving"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var n int
		err := DecodeEvents(bytes.NewReader(b), func(e client.JobEvent) error {
			n++
			if e.Phase == "" {
				t.Fatal("an event without a phase passed on")
			}
			re, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			var back client.JobEvent
			if err := json.Unmarshal(re, &back); err != nil || back != e {
				t.Fatalf("event %+v re-decodes to %+v (%v)", e, back, err)
			}
			return nil
		})
		if n > bytes.Count(b, []byte("\n"))+1 {
			t.Fatalf("%d events from %d lines", n, bytes.Count(b, []byte("\n"))+1)
		}
		longest := 0
		for _, l := range bytes.Split(b, []byte("\n")) {
			longest = max(longest, len(l))
		}
		if longest > maxEvent && err == nil {
			t.Fatal("a line over the bound accepted")
		}
	})
}
