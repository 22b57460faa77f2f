package main

import (
	"fmt"
	"hash/fnv"
	"sort"

	"github.com/anishathalye/porcupine"
)

// Operation names accepted in the "op" field.
const (
	opGet    = "get"
	opPut    = "put"
	opInsert = "insert"
	opUpdate = "update"
	opErase  = "erase"
)

// kvInput is the Porcupine input of one operation.
type kvInput struct {
	Op    string
	Key   string
	Value string // put/insert/update only
}

// kvOutput is the Porcupine output of one operation.
type kvOutput struct {
	Ok      bool
	Value   string // get only, meaningful when Ok
	Unknown bool   // outcome unknown (error/timeout): any output is accepted
	// An unknown operation with a deadline: it took effect before then or not at
	// all, so linearizing it may also leave the state as it was.
	MayNotApply bool
}

// kvState is the per-key state: the history is partitioned by key, so the
// sequential model only tracks one key. It is comparable, so Porcupine's
// default == equality works.
type kvState struct {
	Present bool
	Value   string
}

// kvNondetStep is kvStep, plus "no effect" for an unknown operation with a
// deadline (it took effect before then or never). Porcupine's power-set
// construction (NondeterministicModel.ToModel) tracks the states a key may be in.
func kvNondetStep(state, input, output interface{}) []interface{} {
	var next []interface{}
	if output.(kvOutput).MayNotApply {
		next = append(next, state)
	}
	if ok, n := kvStep(state, input, output); ok {
		next = append(next, n)
	}
	return next
}

// kvStep is the sequential specification of one key of the map.
//
// An unknown-outcome operation always steps (its output is not checked) and
// applies its effect. Because its return time is +infinity it may also be
// linearized after every other operation, which is indistinguishable from it
// never taking effect, so both outcomes are allowed.
func kvStep(state, input, output interface{}) (bool, interface{}) {
	s := state.(kvState)
	in := input.(kvInput)
	out := output.(kvOutput)
	// okIs reports whether the recorded ok flag matches the model's.
	okIs := func(want bool) bool { return out.Unknown || out.Ok == want }

	switch in.Op {
	case opGet:
		if out.Unknown {
			return true, s
		}
		if out.Ok != s.Present || (out.Ok && out.Value != s.Value) {
			return false, s
		}
		return true, s
	case opPut:
		return okIs(true), kvState{Present: true, Value: in.Value}
	case opInsert:
		if !okIs(!s.Present) {
			return false, s
		}
		if s.Present {
			return true, s
		}
		return true, kvState{Present: true, Value: in.Value}
	case opUpdate:
		if !okIs(s.Present) {
			return false, s
		}
		if !s.Present {
			return true, s
		}
		return true, kvState{Present: true, Value: in.Value}
	case opErase:
		return okIs(s.Present), kvState{}
	}
	return false, s
}

// partitionByKey splits a history into one sub-history per key, in sorted
// key order (deterministic, so partition i is always keysOf(history)[i]).
func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	m := make(map[string][]porcupine.Operation)
	for _, op := range history {
		k := op.Input.(kvInput).Key
		m[k] = append(m[k], op)
	}
	out := make([][]porcupine.Operation, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, m[k])
	}
	return out
}

// partitionEventsByKey is partitionByKey for the Event representation.
func partitionEventsByKey(history []porcupine.Event) [][]porcupine.Event {
	m := make(map[string][]porcupine.Event)
	keyOf := make(map[int]string) // event id -> key
	for _, ev := range history {
		if ev.Kind == porcupine.CallEvent {
			keyOf[ev.Id] = ev.Value.(kvInput).Key
		}
		k := keyOf[ev.Id]
		m[k] = append(m[k], ev)
	}
	out := make([][]porcupine.Event, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, m[k])
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func describeOp(input, output interface{}) string {
	in := input.(kvInput)
	out := output.(kvOutput)
	var call string
	switch in.Op {
	case opGet, opErase:
		call = fmt.Sprintf("%s(%q)", in.Op, in.Key)
	default:
		call = fmt.Sprintf("%s(%q, %q)", in.Op, in.Key, in.Value)
	}
	switch {
	case out.Unknown:
		return call + " -> ? (unknown)"
	case in.Op == opGet && out.Ok:
		return fmt.Sprintf("%s -> %q", call, out.Value)
	case in.Op == opGet:
		return call + " -> absent"
	default:
		return fmt.Sprintf("%s -> %t", call, out.Ok)
	}
}

func describeState(state interface{}) string {
	s := state.(kvState)
	if !s.Present {
		return "absent"
	}
	return fmt.Sprintf("%q", s.Value)
}

// kvModel is the Porcupine model of the key-value map, partitioned by key.
var kvModel = (&porcupine.NondeterministicModel{
	Partition:      partitionByKey,
	PartitionEvent: partitionEventsByKey,
	Init:           func() []interface{} { return []interface{}{kvState{}} },
	Step:           kvNondetStep,
	Hash: func(state interface{}) uint64 {
		s := state.(kvState)
		if !s.Present {
			return 0
		}
		h := fnv.New64a()
		h.Write([]byte(s.Value))
		return h.Sum64() | 1
	},
	DescribeOperation: describeOp,
	DescribeState:     describeState,
	DescribeOperationMetadata: func(info interface{}) string {
		if line, ok := info.(int); ok {
			return fmt.Sprintf("history line %d", line)
		}
		return ""
	},
}).ToModel()
