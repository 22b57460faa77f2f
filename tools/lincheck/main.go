// Command lincheck checks a recorded concurrent key-value history for
// linearizability with Porcupine. See README.md for the input format.
//
// Exit codes: 0 linearizable, 1 NOT linearizable, 2 bad usage or input,
// 3 unknown (the check timed out).
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/anishathalye/porcupine"
)

const (
	exitOK       = 0
	exitIllegal  = 1
	exitBadInput = 2
	exitTimeout  = 3

	maxShownOps = 20 // operations listed for a failing key
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lincheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := fs.Duration("timeout", 60*time.Second, "give up after this long and report unknown (0 = no limit)")
	visualize := fs.String("visualize", "", "write Porcupine's HTML visualization of the check to this file")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lincheck [-timeout 60s] [-visualize out.html] history.jsonl")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitBadInput
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitBadInput
	}
	path := fs.Arg(0)

	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(stderr, "lincheck: %v\n", err)
		return exitBadInput
	}
	ops, err := readHistory(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(stderr, "lincheck: %s: %v\n", path, err)
		return exitBadInput
	}
	parts := partitionByKey(ops)
	summary := fmt.Sprintf("%d operations, %d keys", len(ops), len(parts))

	res, info, haveInfo := check(ops, *timeout, *visualize != "")
	if *visualize != "" && haveInfo {
		if err := porcupine.VisualizePath(kvModel, info, *visualize); err != nil {
			fmt.Fprintf(stderr, "lincheck: writing visualization: %v\n", err)
		}
	}

	switch res {
	case porcupine.Ok:
		fmt.Fprintf(stdout, "linearizable: %s\n", summary)
		return exitOK
	case porcupine.Unknown:
		fmt.Fprintf(stdout, "unknown: check timed out after %v (%s)\n", *timeout, summary)
		return exitTimeout
	}
	fmt.Fprintf(stdout, "NOT linearizable: %s\n", summary)
	if haveInfo {
		describeFailure(stdout, parts, info)
	} else {
		fmt.Fprintln(stdout, "(timed out while locating the failing key)")
	}
	if *visualize != "" && haveInfo {
		fmt.Fprintf(stdout, "visualization: %s\n", *visualize)
	}
	return exitIllegal
}

// check runs Porcupine on the history. Without wantInfo it first runs the
// cheaper non-verbose check, which stops at the first failing key, and only
// re-runs verbosely (to describe the failure) if the history is illegal.
// haveInfo is false when no trustworthy LinearizationInfo could be computed
// within the timeout.
func check(ops []porcupine.Operation, timeout time.Duration, wantInfo bool) (res porcupine.CheckResult, info porcupine.LinearizationInfo, haveInfo bool) {
	start := time.Now()
	if wantInfo {
		res, info = porcupine.CheckOperationsVerbose(kvModel, ops, timeout)
		return res, info, res != porcupine.Illegal || !timedOut(start, timeout)
	}
	if res = porcupine.CheckOperationsTimeout(kvModel, ops, timeout); res != porcupine.Illegal {
		return res, info, false
	}
	remaining := time.Duration(0) // 0 = no limit
	if timeout > 0 {
		if remaining = timeout - time.Since(start); remaining <= 0 {
			return res, info, false
		}
	}
	_, info = porcupine.CheckOperationsVerbose(kvModel, ops, remaining)
	return res, info, !timedOut(start, timeout)
}

// timedOut reports whether a check that began at start may have been cut
// short by the timeout, leaving its partial linearizations incomplete.
func timedOut(start time.Time, timeout time.Duration) bool {
	return timeout > 0 && time.Since(start) >= timeout
}

// describeFailure prints the first key whose sub-history has no
// linearization, with its operations. A partition failed iff its longest
// partial linearization does not cover all of its operations; partition i of
// info is parts[i] because partitionByKey is deterministic.
func describeFailure(w io.Writer, parts [][]porcupine.Operation, info porcupine.LinearizationInfo) {
	partials := info.PartialLinearizations()
	longest := func(i int) int {
		n := 0
		for _, p := range partials[i] {
			if len(p) > n {
				n = len(p)
			}
		}
		return n
	}
	var failed []int
	for i, part := range parts {
		if longest(i) < len(part) {
			failed = append(failed, i)
		}
	}
	if len(failed) == 0 {
		return
	}
	part := parts[failed[0]]
	key := part[0].Input.(kvInput).Key
	fmt.Fprintf(w, "failing key %q: %d operations, the longest partial linearization covers %d", key, len(part), longest(failed[0]))
	if n := len(failed) - 1; n > 0 {
		fmt.Fprintf(w, " (%d other key%s also failed)", n, plural(n))
	}
	fmt.Fprintln(w, "; its operations:")
	for i, op := range part {
		if i == maxShownOps {
			fmt.Fprintf(w, "  ... %d more\n", len(part)-maxShownOps)
			break
		}
		fmt.Fprintf(w, "  line %d: client %d [%d, %s] %s\n", op.Metadata.(int), op.ClientId,
			op.Call, fmtReturn(op.Return), describeOp(op.Input, op.Output))
	}
}

func fmtReturn(t int64) string {
	if t == math.MaxInt64 {
		return "inf"
	}
	return fmt.Sprint(t)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
