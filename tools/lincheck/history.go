package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/anishathalye/porcupine"
)

// record is one line of the JSON Lines history (see README.md). Pointer
// fields distinguish "missing" from the zero value.
type record struct {
	Client   *int    `json:"client"`
	Op       *string `json:"op"`
	Key      *string `json:"key"`
	Value    *string `json:"value"`
	Ok       *bool   `json:"ok"`
	Call     *int64  `json:"call"`
	Return   *int64  `json:"return"`
	Unknown  bool    `json:"unknown"`
	Deadline *int64  `json:"deadline"`
}

// inputError is a malformed history; Line is 1-based.
type inputError struct {
	Line int
	Msg  string
}

func (e *inputError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// readHistory parses a JSON Lines history into Porcupine operations. Blank
// lines are skipped. Each operation's Metadata is its line number.
func readHistory(r io.Reader) ([]porcupine.Operation, error) {
	var ops []porcupine.Operation
	br := bufio.NewReader(r)
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("line %d: read error: %w", lineNo, err)
		}
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			op, perr := parseLine(trimmed)
			if perr != nil {
				return nil, &inputError{Line: lineNo, Msg: perr.Error()}
			}
			op.Metadata = lineNo
			ops = append(ops, op)
		}
		if err == io.EOF {
			return ops, nil
		}
	}
}

func parseLine(line []byte) (porcupine.Operation, error) {
	var rec record
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return porcupine.Operation{}, jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return porcupine.Operation{}, errors.New("trailing data after the JSON object")
	}

	var missing []string
	need := func(present bool, name string) {
		if !present {
			missing = append(missing, fmt.Sprintf("%q", name))
		}
	}
	need(rec.Client != nil, "client")
	need(rec.Op != nil, "op")
	need(rec.Key != nil, "key")
	need(rec.Call != nil, "call")
	if !rec.Unknown {
		need(rec.Return != nil, "return")
		need(rec.Ok != nil, "ok")
	}
	if len(missing) > 0 {
		return porcupine.Operation{}, fmt.Errorf("missing field %s", strings.Join(missing, ", "))
	}

	op := *rec.Op
	switch op {
	case opGet, opErase:
	case opPut, opInsert, opUpdate:
		if rec.Value == nil {
			return porcupine.Operation{}, fmt.Errorf("missing field \"value\" (required for %s)", op)
		}
	default:
		return porcupine.Operation{}, fmt.Errorf("unknown op %q (want get, put, insert, update or erase)", op)
	}
	if *rec.Client < 0 {
		return porcupine.Operation{}, fmt.Errorf("\"client\" must be >= 0, got %d", *rec.Client)
	}

	in := kvInput{Op: op, Key: *rec.Key}
	out := kvOutput{Unknown: rec.Unknown}
	ret := int64(math.MaxInt64) // unknown outcome: may take effect at any time after the call
	if rec.Deadline != nil {
		if !rec.Unknown {
			return porcupine.Operation{}, errors.New("\"deadline\" is for \"unknown\": true operations only")
		}
		if *rec.Deadline < *rec.Call {
			return porcupine.Operation{}, fmt.Errorf("\"deadline\" (%d) is before \"call\" (%d)", *rec.Deadline, *rec.Call)
		}
		ret = *rec.Deadline // it took effect before then, if at all (e.g. its server died)
		out.MayNotApply = true
	}
	if !rec.Unknown {
		ret = *rec.Return
		if ret < *rec.Call {
			return porcupine.Operation{}, fmt.Errorf("\"return\" (%d) is before \"call\" (%d)", ret, *rec.Call)
		}
		out.Ok = *rec.Ok
		if op == opPut && !out.Ok {
			return porcupine.Operation{}, errors.New("put must have \"ok\": true (a failed put is \"unknown\": true)")
		}
		if op == opGet && out.Ok {
			if rec.Value == nil {
				return porcupine.Operation{}, errors.New("missing field \"value\" (required for get with \"ok\": true)")
			}
			out.Value = *rec.Value
		}
	}
	if op != opGet && rec.Value != nil {
		in.Value = *rec.Value
	}
	return porcupine.Operation{
		ClientId: *rec.Client,
		Input:    in,
		Call:     *rec.Call,
		Output:   out,
		Return:   ret,
	}, nil
}

// jsonError turns encoding/json errors into messages that name the field.
func jsonError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return fmt.Errorf("field %q: expected %s, got JSON %s", typeErr.Field, typeErr.Type, typeErr.Value)
	case errors.As(err, &typeErr):
		return fmt.Errorf("expected a JSON object, got JSON %s", typeErr.Value)
	case errors.As(err, &syntaxErr), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("invalid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return errors.New(strings.TrimPrefix(err.Error(), "json: "))
}
