// The client's names, as node's tests call them (node/client).

package node

import "github.com/riffle-net/riffle/node/client"

var CheckBudgetHandover = client.CheckBudgetHandover
var CheckHandover = client.CheckHandover

type Client = client.Client
type ClientConfig = client.ClientConfig

const ClientDBFile = client.ClientDBFile

type ClientHookCfg = client.ClientHookCfg
type ClientSnapshot = client.ClientSnapshot
type ClientStatus = client.ClientStatus

const DefaultUnlistedEpochs = client.DefaultUnlistedEpochs

var ErrNotListed = client.ErrNotListed
var ErrOverBudget = client.ErrOverBudget

type GetStatus = client.GetStatus

const JobEpochs = client.JobEpochs

type JobEvent = client.JobEvent

const NetworksDir = client.NetworksDir

var NewClient = client.NewClient

type PausedJob = client.PausedJob

const PhaseDone = client.PhaseDone
const PhaseFailed = client.PhaseFailed
const PhaseFetched = client.PhaseFetched
const PhaseMoving = client.PhaseMoving
const PhasePaused = client.PhasePaused
const PhaseResuming = client.PhaseResuming
const PhaseShared = client.PhaseShared
const PhaseStarted = client.PhaseStarted
const PhaseWaiting = client.PhaseWaiting
const PhaseWarning = client.PhaseWarning

type Pin = client.Pin

const PresenceMax = client.PresenceMax
const PresenceMin = client.PresenceMin

var ProgressOf = client.ProgressOf

const ResendWaitMax = client.ResendWaitMax

type ShareHandle = client.ShareHandle
type Stats = client.Stats

var WithMaxEpochs = client.WithMaxEpochs
var WithProgress = client.WithProgress
var WithUnlistedEpochs = client.WithUnlistedEpochs
