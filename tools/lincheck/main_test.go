package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// rec is one history line under construction.
type rec map[string]any

func op(client int, name, key string, call, ret int64) rec {
	return rec{"client": client, "op": name, "key": key, "call": call, "return": ret, "ok": true}
}
func put(c int, k, v string, call, ret int64) rec {
	return op(c, opPut, k, call, ret).with("value", v)
}
func get(c int, k, v string, found bool, call, ret int64) rec {
	return op(c, opGet, k, call, ret).with("value", v).with("ok", found)
}
func ins(c int, k, v string, ok bool, call, ret int64) rec {
	return op(c, opInsert, k, call, ret).with("value", v).with("ok", ok)
}
func upd(c int, k, v string, ok bool, call, ret int64) rec {
	return op(c, opUpdate, k, call, ret).with("value", v).with("ok", ok)
}
func era(c int, k string, ok bool, call, ret int64) rec {
	return op(c, opErase, k, call, ret).with("ok", ok)
}
func (r rec) with(field string, v any) rec { r[field] = v; return r }

// unknown marks an operation as failed with an unknown outcome. Its recorded
// return time and ok flag are kept (the checker must ignore them).
func (r rec) unknown() rec { return r.with("unknown", true) }

func writeHistory(t *testing.T, lines []string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func toLines(t *testing.T, recs []rec) []string {
	t.Helper()
	lines := make([]string, len(recs))
	for i, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = string(b)
	}
	return lines
}

// runLincheck runs the tool on a history and returns exit code, stdout, stderr.
func runLincheck(t *testing.T, flags []string, lines []string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(append(flags, writeHistory(t, lines)), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func expect(t *testing.T, want int, recs ...rec) string {
	t.Helper()
	code, out, errOut := runLincheck(t, nil, toLines(t, recs))
	if code != want {
		t.Fatalf("exit code %d, want %d\nstdout:\n%sstderr:\n%s", code, want, out, errOut)
	}
	return out
}

func TestSequentialHistoryIsLinearizable(t *testing.T) {
	out := expect(t, exitOK,
		get(0, "a", "", false, 0, 10),
		put(0, "a", "1", 20, 30),
		get(1, "a", "1", true, 40, 50),
		put(1, "b", "2", 60, 70),
		put(0, "a", "3", 80, 90),
		get(0, "a", "3", true, 100, 110),
		get(1, "b", "2", true, 120, 130),
	)
	if want := "linearizable: 7 operations, 2 keys\n"; out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
}

func TestConcurrentPutGetEitherOutcome(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value string
	}{{"old value", "old"}, {"new value", "new"}} {
		t.Run(tc.name, func(t *testing.T) {
			expect(t, exitOK,
				put(0, "k", "old", 0, 10),
				put(0, "k", "new", 20, 50),
				get(1, "k", tc.value, true, 30, 40), // overlaps the second put
			)
		})
	}
	t.Run("absent before first put", func(t *testing.T) {
		expect(t, exitOK,
			put(0, "k", "v", 0, 50),
			get(1, "k", "", false, 10, 20),
			get(2, "k", "v", true, 15, 60),
		)
	})
}

func TestStaleReadAfterCompletedPut(t *testing.T) {
	out := expect(t, exitIllegal,
		put(0, "k", "old", 0, 10),
		put(0, "k", "new", 20, 30),
		get(1, "k", "old", true, 40, 50), // put "new" completed before this began
		put(2, "other", "x", 0, 100),
	)
	for _, want := range []string{"NOT linearizable: 4 operations, 2 keys", `failing key "k": 3 operations`, `line 3: client 1 [40, 50] get("k") -> "old"`} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}

func TestLostInsert(t *testing.T) {
	expect(t, exitIllegal,
		ins(0, "k", "a", true, 0, 20),
		ins(1, "k", "b", true, 5, 25), // both claim to have inserted
	)
	// One winner is fine, whichever it is, as long as reads agree.
	expect(t, exitOK,
		ins(0, "k", "a", false, 0, 20),
		ins(1, "k", "b", true, 5, 25),
		get(2, "k", "b", true, 30, 40),
	)
	expect(t, exitIllegal,
		ins(0, "k", "a", false, 0, 20),
		ins(1, "k", "b", true, 5, 25),
		get(2, "k", "a", true, 30, 40), // the losing insert's value
	)
}

func TestEraseInsertUpdateSemantics(t *testing.T) {
	tests := []struct {
		name string
		want int
		ops  []rec
	}{
		{"insert absent then present", exitOK, []rec{
			ins(0, "k", "1", true, 0, 1), ins(0, "k", "2", false, 2, 3), get(0, "k", "1", true, 4, 5)}},
		{"insert present must not overwrite", exitIllegal, []rec{
			ins(0, "k", "1", true, 0, 1), ins(0, "k", "2", false, 2, 3), get(0, "k", "2", true, 4, 5)}},
		{"insert present ok=true", exitIllegal, []rec{
			put(0, "k", "1", 0, 1), ins(0, "k", "2", true, 2, 3)}},
		{"insert absent ok=false", exitIllegal, []rec{
			ins(0, "k", "1", false, 0, 1)}},
		{"update absent", exitOK, []rec{
			upd(0, "k", "1", false, 0, 1), get(0, "k", "", false, 2, 3)}},
		{"update absent must not insert", exitIllegal, []rec{
			upd(0, "k", "1", false, 0, 1), get(0, "k", "1", true, 2, 3)}},
		{"update absent ok=true", exitIllegal, []rec{
			upd(0, "k", "1", true, 0, 1)}},
		{"update present", exitOK, []rec{
			put(0, "k", "1", 0, 1), upd(0, "k", "2", true, 2, 3), get(0, "k", "2", true, 4, 5)}},
		{"update present ok=false", exitIllegal, []rec{
			put(0, "k", "1", 0, 1), upd(0, "k", "2", false, 2, 3)}},
		{"erase present then absent, reinsert", exitOK, []rec{
			put(0, "k", "1", 0, 1), era(0, "k", true, 2, 3), get(0, "k", "", false, 4, 5),
			era(0, "k", false, 6, 7), ins(0, "k", "2", true, 8, 9), get(0, "k", "2", true, 10, 11)}},
		{"erase absent ok=true", exitIllegal, []rec{
			era(0, "k", true, 0, 1)}},
		{"erase present ok=false", exitIllegal, []rec{
			put(0, "k", "1", 0, 1), era(0, "k", false, 2, 3)}},
		{"get after erase finds value", exitIllegal, []rec{
			put(0, "k", "1", 0, 1), era(0, "k", true, 2, 3), get(0, "k", "1", true, 4, 5)}},
		{"put always succeeds, present or absent", exitOK, []rec{
			put(0, "k", "1", 0, 1), put(0, "k", "2", 2, 3), era(0, "k", true, 4, 5), put(0, "k", "3", 6, 7),
			get(0, "k", "3", true, 8, 9)}},
		{"concurrent erase and update", exitOK, []rec{
			put(0, "k", "1", 0, 1), era(0, "k", true, 2, 10), upd(1, "k", "2", true, 3, 9), get(0, "k", "", false, 11, 12)}},
		{"concurrent erase and update, update after erase", exitIllegal, []rec{
			put(0, "k", "1", 0, 1), era(0, "k", true, 2, 10), upd(1, "k", "2", true, 3, 9), get(0, "k", "2", true, 11, 12)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { expect(t, tc.want, tc.ops...) })
	}
}

func TestUnknownOutcomeOps(t *testing.T) {
	tests := []struct {
		name string
		want int
		ops  []rec
	}{
		{"unknown put took effect", exitOK, []rec{
			put(0, "k", "v", 0, 10).unknown(), get(1, "k", "v", true, 20, 30)}},
		{"unknown put did not take effect", exitOK, []rec{
			put(0, "k", "v", 0, 10).unknown(), get(1, "k", "", false, 20, 30)}},
		{"unknown put took effect late", exitOK, []rec{
			put(0, "k", "v", 0, 10).unknown(), get(1, "k", "", false, 20, 30), get(1, "k", "v", true, 40, 50)}},
		{"unknown put cannot be undone once seen", exitIllegal, []rec{
			put(0, "k", "v", 0, 10).unknown(), get(1, "k", "v", true, 20, 30), get(1, "k", "", false, 40, 50)}},
		{"unknown put cannot act before its call", exitIllegal, []rec{
			get(1, "k", "v", true, 0, 10), put(0, "k", "v", 20, 30).unknown()}},
		{"unknown put does not allow arbitrary values", exitIllegal, []rec{
			put(0, "k", "v", 0, 10).unknown(), get(1, "k", "w", true, 20, 30)}},
		{"unknown insert recorded ok=false took effect", exitOK, []rec{
			ins(0, "k", "v", false, 0, 10).unknown(), get(1, "k", "v", true, 20, 30)}},
		{"unknown insert recorded ok=true did not", exitOK, []rec{
			ins(0, "k", "v", true, 0, 10).unknown(), get(1, "k", "", false, 20, 30)}},
		{"unknown insert on present key is a no-op", exitIllegal, []rec{
			put(0, "k", "a", 0, 1), ins(0, "k", "v", true, 2, 3).unknown(), get(1, "k", "v", true, 20, 30)}},
		{"unknown update either way", exitOK, []rec{
			put(0, "k", "a", 0, 1), upd(0, "k", "b", false, 2, 3).unknown(),
			get(1, "k", "a", true, 20, 30), get(1, "k", "b", true, 40, 50)}},
		{"unknown erase took effect", exitOK, []rec{
			put(0, "k", "a", 0, 1), era(0, "k", false, 2, 3).unknown(), get(1, "k", "", false, 20, 30)}},
		{"unknown erase did not", exitOK, []rec{
			put(0, "k", "a", 0, 1), era(0, "k", true, 2, 3).unknown(), get(1, "k", "a", true, 20, 30)}},
		{"unknown get output ignored", exitOK, []rec{
			get(0, "k", "garbage", true, 0, 1).unknown(), put(0, "k", "a", 2, 3)}},
		{"unknown put before its deadline", exitOK, []rec{
			put(0, "k", "v", 0, 10).unknown().with("deadline", 15), get(1, "k", "v", true, 20, 30)}},
		{"unknown put not at all before its deadline", exitOK, []rec{
			put(0, "k", "v", 0, 10).unknown().with("deadline", 15), get(1, "k", "", false, 20, 30),
			get(1, "k", "", false, 40, 50)}},
		{"unknown put cannot act after its deadline", exitIllegal, []rec{
			put(0, "k", "v", 0, 10).unknown().with("deadline", 15), get(1, "k", "", false, 20, 30),
			get(1, "k", "v", true, 40, 50)}},
		{"unknown op needs no return or ok", exitOK, []rec{
			{"client": 0, "op": "put", "key": "k", "value": "v", "call": 0, "unknown": true},
			get(1, "k", "v", true, 20, 30)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { expect(t, tc.want, tc.ops...) })
	}
}

func TestMalformedInput(t *testing.T) {
	good := `{"client":0,"op":"put","key":"a","value":"1","ok":true,"call":0,"return":1}`
	tests := []struct {
		line string
		want string
	}{
		{`not json`, "invalid JSON"},
		{`{"client":0,"op":"put"`, "invalid JSON"},
		{`[1,2]`, "expected a JSON object"},
		{`{"client":0,"op":"get","key":"a","call":0}`, `missing field "return", "ok"`},
		{`{"op":"get","key":"a","ok":false,"call":0,"return":1}`, `missing field "client"`},
		{`{"client":0,"op":"scan","key":"a","ok":true,"call":0,"return":1}`, `unknown op "scan"`},
		{`{"client":0,"op":"get","key":"a","ok":true,"call":0,"return":1}`, `missing field "value" (required for get`},
		{`{"client":0,"op":"insert","key":"a","ok":true,"call":0,"return":1}`, `missing field "value" (required for insert)`},
		{`{"client":0,"op":"put","key":"a","value":"1","ok":false,"call":0,"return":1}`, "put must have"},
		{`{"client":0,"op":"get","key":"a","ok":false,"call":5,"return":1}`, `"return" (1) is before "call" (5)`},
		{`{"client":-1,"op":"get","key":"a","ok":false,"call":0,"return":1}`, `"client" must be >= 0`},
		{`{"client":0,"op":"get","key":"a","ok":false,"call":"0","return":1}`, `field "call": expected int64`},
		{`{"client":0,"op":"get","key":"a","ok":false,"call":0.5,"return":1}`, `field "call"`},
		{`{"client":0,"op":"get","key":"a","ok":false,"call":0,"retrun":1}`, `unknown field "retrun"`},
		{`{"client":0,"op":"get","key":"a","ok":false,"call":0,"return":1,"deadline":2}`, `"deadline" is for "unknown": true`},
		{`{"client":0,"op":"erase","key":"a","unknown":true,"call":5,"deadline":1}`, `"deadline" (1) is before "call" (5)`},
		{good + ` {}`, "trailing data"},
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			code, out, errOut := runLincheck(t, nil, []string{good, "", tc.line, good})
			if code != exitBadInput {
				t.Fatalf("exit code %d, want %d\nstdout: %s", code, exitBadInput, out)
			}
			if !strings.Contains(errOut, "line 3: "+tc.want) {
				t.Errorf("stderr %q does not contain %q", errOut, "line 3: "+tc.want)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	var stdout, stderr bytes.Buffer
	for _, args := range [][]string{nil, {"a", "b"}, {"-bogus", "x"}, {filepath.Join(t.TempDir(), "missing.jsonl")}} {
		if code := run(args, &stdout, &stderr); code != exitBadInput {
			t.Errorf("run(%q) = %d, want %d", args, code, exitBadInput)
		}
	}
}

func TestEmptyHistory(t *testing.T) {
	code, out, _ := runLincheck(t, nil, []string{""})
	if code != exitOK || out != "linearizable: 0 operations, 0 keys\n" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
}

// randomHistory builds a linearizable history by construction: operation i
// takes effect at time 100*i on a real map, and its [call, return] interval
// is stretched randomly around that point so that it overlaps its neighbours.
func randomHistory(rng *rand.Rand, n, keys, clients int) []rec {
	state := map[string]string{}
	var recs []rec
	for i := 0; i < n; i++ {
		at := int64(100 * (i + 1))
		call, ret := at-rng.Int63n(400), at+rng.Int63n(400)
		c, k, v := i%clients, fmt.Sprintf("key%d", rng.Intn(keys)), fmt.Sprint(i)
		old, present := state[k]
		switch rng.Intn(5) {
		case 0:
			recs = append(recs, get(c, k, old, present, call, ret))
		case 1:
			state[k] = v
			recs = append(recs, put(c, k, v, call, ret))
		case 2:
			if !present {
				state[k] = v
			}
			recs = append(recs, ins(c, k, v, !present, call, ret))
		case 3:
			if present {
				state[k] = v
			}
			recs = append(recs, upd(c, k, v, present, call, ret))
		case 4:
			delete(state, k)
			recs = append(recs, era(c, k, present, call, ret))
		}
	}
	return recs
}

func TestLargePartitionedHistory(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	recs := randomHistory(rng, 20000, 200, 16)
	start := time.Now()
	out := expect(t, exitOK, recs...)
	if !strings.HasPrefix(out, "linearizable: 20000 operations, 200 keys") {
		t.Errorf("stdout %q", out)
	}
	t.Logf("checked 20000 operations in %v", time.Since(start))

	// Corrupt one get that found a value: it now returns a never-written value.
	for i := len(recs) / 2; ; i++ {
		if recs[i]["op"] == opGet && recs[i]["ok"] == true {
			recs[i]["value"] = "never-written"
			out = expect(t, exitIllegal, recs...)
			want := fmt.Sprintf("failing key %q", recs[i]["key"])
			if !strings.Contains(out, want) {
				t.Errorf("stdout lacks %q:\n%s", want, out)
			}
			break
		}
	}
}

func TestTimeoutReportsUnknown(t *testing.T) {
	// 40 fully concurrent puts and a get of a value nobody wrote: refuting
	// it means trying ~2^40 orders, so the check cannot finish in time.
	var recs []rec
	for i := 0; i < 40; i++ {
		recs = append(recs, put(i, "k", fmt.Sprint(i), 0, 1000))
	}
	recs = append(recs, get(40, "k", "never-written", true, 0, 1000))
	code, out, _ := runLincheck(t, []string{"-timeout", "200ms"}, toLines(t, recs))
	if code != exitTimeout || !strings.HasPrefix(out, "unknown: ") {
		t.Fatalf("exit %d, stdout %q; want exit %d and unknown", code, out, exitTimeout)
	}
}

func TestVisualize(t *testing.T) {
	for _, tc := range []struct {
		name string
		want int
		ops  []rec
	}{
		{"ok", exitOK, []rec{put(0, "k", "v", 0, 10), get(1, "k", "v", true, 5, 15)}},
		{"illegal", exitIllegal, []rec{put(0, "k", "v", 0, 10), get(1, "k", "", false, 20, 30), put(2, "x", "y", 0, 5).unknown()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			html := filepath.Join(t.TempDir(), "out.html")
			code, out, errOut := runLincheck(t, []string{"-visualize", html}, toLines(t, tc.ops))
			if code != tc.want {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.want, out, errOut)
			}
			b, err := os.ReadFile(html)
			if err != nil || !bytes.Contains(b, []byte(`get(\"k\")`)) {
				t.Fatalf("visualization not written or lacks the history (err %v)", err)
			}
		})
	}
}

func TestPartitionEventByKey(t *testing.T) {
	in := func(o, k, v string) kvInput { return kvInput{Op: o, Key: k, Value: v} }
	events := func(getOut kvOutput) []porcupine.Event {
		return []porcupine.Event{
			{ClientId: 0, Kind: porcupine.CallEvent, Value: in(opPut, "a", "1"), Id: 0},
			{ClientId: 1, Kind: porcupine.CallEvent, Value: in(opPut, "b", "2"), Id: 1},
			{ClientId: 0, Kind: porcupine.ReturnEvent, Value: kvOutput{Ok: true}, Id: 0},
			{ClientId: 1, Kind: porcupine.ReturnEvent, Value: kvOutput{Ok: true}, Id: 1},
			{ClientId: 0, Kind: porcupine.CallEvent, Value: in(opGet, "a", ""), Id: 2},
			{ClientId: 0, Kind: porcupine.ReturnEvent, Value: getOut, Id: 2},
		}
	}
	if parts := partitionEventsByKey(events(kvOutput{})); len(parts) != 2 || len(parts[0]) != 4 || len(parts[1]) != 2 {
		t.Fatalf("bad partition: %v", parts)
	}
	if !porcupine.CheckEvents(kvModel, events(kvOutput{Ok: true, Value: "1"})) {
		t.Error("linearizable event history rejected")
	}
	if porcupine.CheckEvents(kvModel, events(kvOutput{Ok: true, Value: "2"})) {
		t.Error("non-linearizable event history accepted")
	}
}
