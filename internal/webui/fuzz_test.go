package webui

import (
	"net/http/httptest"
	"strings"
	"testing"
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
