package client

import "github.com/riffle-net/riffle/node/client/internal/meter"

// A client's budget (ClientConfig.MaxRate): the rule is internal/meter's.

// ErrOverBudget is a group whose constants allow more than MaxRate.
var ErrOverBudget = meter.ErrOverBudget

// Err is why the client stopped by itself (ErrOverBudget), nil while it
// runs or if it was closed.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fatal
}

// Done is closed once the client stopped, by Close or by itself (Err).
func (c *Client) Done() <-chan struct{} { return c.done }
