package node

// The server's test hook points (hooks.go: empty in the binary;
// hooks_riffletest.go: what they call) are methods of two views of the
// server, not of Server, so that Server's own methods are its behaviour.
// A view is the server itself under another type: the conversion costs
// nothing, and in the binary both it and the empty hook inline away.
type (
	// hookCfg: the hooks a test sets in the server's configuration (the
	// observer of observe.go, the leader's cheat of cheat.go, the index
	// page's budget).
	hookCfg Server
	// hookRun: the misbehaviours a test sets on a running server
	// (serverHooks, a malicious cast).
	hookRun Server
)

// hookCfg is this server's configured hooks.
func (s *Server) hookCfg() *hookCfg { return (*hookCfg)(s) }

// hookRun is this server's hooks set while it runs.
func (s *Server) hookRun() *hookRun { return (*hookRun)(s) }
