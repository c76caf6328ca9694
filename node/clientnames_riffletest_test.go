//go:build riffletest

package node

import "github.com/riffle-net/riffle/node/client"

var BudgetDrops = client.BudgetDrops
var CheckDupAbort = client.CheckDupAbort
var CheckPrevious = client.CheckPrevious

type ClientHooks = client.ClientHooks
type ClientObserver = client.ClientObserver
type DupAnswer = client.DupAnswer
type DupClientTest = client.DupClientTest

const DupForge = client.DupForge
const DupHonest = client.DupHonest
const DupSilent = client.DupSilent

var FetchWindow = client.FetchWindow
var HoldWindowChain = client.HoldWindowChain
var NewBareClient = client.NewBareClient

const PendingFile = client.PendingFile
const ResendHold = client.ResendHold

type SyncResult = client.SyncResult
