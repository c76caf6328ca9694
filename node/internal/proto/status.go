package proto

// What servers and clients report to their local API.

// ChainServer is one server of an epoch's chain, in chain order.
type ChainServer struct {
	ID   string `json:"id"`
	Nick string `json:"nick"`
}
