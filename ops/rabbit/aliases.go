package rabbit

import "github.com/redrive/redrive/ops/rabbit/rabbitmodel"

// The adapter's own names for the model's types, constants and functions, so that it and its
// callers read as before; domain packages import rabbitmodel, which needs no driver.

type (
	Header         = rabbitmodel.Header
	Properties     = rabbitmodel.Properties
	PropertiesJSON = rabbitmodel.PropertiesJSON
	Message        = rabbitmodel.Message
	BrowseResult   = rabbitmodel.BrowseResult
	Whole          = rabbitmodel.Whole
	Death          = rabbitmodel.Death
	DeadLetter     = rabbitmodel.DeadLetter
	ErrorGroup     = rabbitmodel.ErrorGroup
	Queue          = rabbitmodel.Queue
	QueueRef       = rabbitmodel.QueueRef
	Edge           = rabbitmodel.Edge
	RetryLoop      = rabbitmodel.RetryLoop
	Topology       = rabbitmodel.Topology
	DLQTarget      = rabbitmodel.DLQTarget
	Permission     = rabbitmodel.Permission
	Version        = rabbitmodel.Version
)

const (
	MaxBrowse          = rabbitmodel.MaxBrowse
	MaxBodyBytes       = rabbitmodel.MaxBodyBytes
	MaxQuorumBrowse    = rabbitmodel.MaxQuorumBrowse
	MaxPeek            = rabbitmodel.MaxPeek
	HeaderRestoredFrom = rabbitmodel.HeaderRestoredFrom

	HeaderXDeath              = rabbitmodel.HeaderXDeath
	HeaderFirstDeathQueue     = rabbitmodel.HeaderFirstDeathQueue
	HeaderFirstDeathReason    = rabbitmodel.HeaderFirstDeathReason
	HeaderFirstDeathExchange  = rabbitmodel.HeaderFirstDeathExchange
	HeaderLastDeathQueue      = rabbitmodel.HeaderLastDeathQueue
	HeaderLastDeathReason     = rabbitmodel.HeaderLastDeathReason
	HeaderLastDeathExchange   = rabbitmodel.HeaderLastDeathExchange
	HeaderExceptionMessage    = rabbitmodel.HeaderExceptionMessage
	HeaderExceptionStacktrace = rabbitmodel.HeaderExceptionStacktrace
	HeaderOriginalExchange    = rabbitmodel.HeaderOriginalExchange
	HeaderOriginalRoutingKey  = rabbitmodel.HeaderOriginalRoutingKey
	HeaderRetryCount          = rabbitmodel.HeaderRetryCount
	HeaderReplayCount         = rabbitmodel.HeaderReplayCount

	ReasonRejected      = rabbitmodel.ReasonRejected
	ReasonExpired       = rabbitmodel.ReasonExpired
	ReasonMaxLen        = rabbitmodel.ReasonMaxLen
	ReasonDeliveryLimit = rabbitmodel.ReasonDeliveryLimit

	TypeClassic    = rabbitmodel.TypeClassic
	TypeQuorum     = rabbitmodel.TypeQuorum
	TypeStream     = rabbitmodel.TypeStream
	SourceArgument = rabbitmodel.SourceArgument
	SourcePolicy   = rabbitmodel.SourcePolicy
	DefaultVhost   = rabbitmodel.DefaultVhost
)

func PropertiesMap(p Properties) map[string]any { return rabbitmodel.PropertiesMap(p) }

func PropertiesFromMap(m map[string]any) (Properties, error) { return rabbitmodel.PropertiesFromMap(m) }

func ErrorGroups(msgs []Message) []ErrorGroup { return rabbitmodel.ErrorGroups(msgs) }

func BrowseCost(q Queue, v Version) (refusal, warning string) { return rabbitmodel.BrowseCost(q, v) }

func UnlimitFix(q Queue) string { return rabbitmodel.UnlimitFix(q) }

func UnlimitCommand(q Queue) string { return rabbitmodel.UnlimitCommand(q) }

func UnlimitAdvice(q Queue) string { return rabbitmodel.UnlimitAdvice(q) }

func UnlimitPolicy(q Queue) string { return rabbitmodel.UnlimitPolicy(q) }

func VhostName(vhost, name string) string { return rabbitmodel.VhostName(vhost, name) }

func DeadLettersFrom(t Topology, vhost, queue string) []string {
	return rabbitmodel.DeadLettersFrom(t, vhost, queue)
}

// Republish and Custodian are the model's (rabbitmodel/replay.go): the replay engine names them
// without the client. ErrUnroutable is the same error under both names, so errors.Is matches either.
type (
	Republish = rabbitmodel.Republish
	Custodian = rabbitmodel.Custodian
)

var ErrUnroutable = rabbitmodel.ErrUnroutable
