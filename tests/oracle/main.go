// Command hami-oracle answers protocol questions with HAMi v2.10.0's own code, so the Python test suite
// and benchmarks can compare this project with HAMi value by value.
//
// This file is the project's; HAMi is not copied into the repository. scripts/build-oracle.sh copies
// HAMi's unmodified tree (shared/hami/v2.10.0) into a cache directory outside the clone, puts this file
// there as cmd/hami-oracle/main.go and builds it with HAMi's own go.mod and go.sum, so every call below
// goes to HAMi's real functions in github.com/Project-HAMi/HAMi/pkg/device:
//
//	decode_legacy  device.DecodeNodeDevices
//	decode_json    device.UnMarshalNodeDevices
//	encode_legacy  device.EncodeNodeDevices
//	encode_json    device.MarshalNodeDevices
//	decode_pair_scores  device.DecodePairScores (the NVIDIA topology scores, hami.io/node-nvidia-score)
//	check_health   device.CheckHealth, against client-go's fake clientset holding the Node (as HAMi's
//	               unit tests do), through HAMi's global client.KubeClient
//	bench          one of the four codec functions timed in this process (no pipe, no process start)
//
// Protocol: JSON Lines. One request per stdin line, one response per stdout line, flushed each time.
//
//	{"op": "decode_legacy" | "decode_json" | "decode_pair_scores", "value": "<str>"}  (or "value_b64")
//	{"op": "encode_legacy" | "encode_json", "devices": [<device>|null, ...]}
//	{"op": "check_health", "vendor": "<devType>", "handshake_key": "<annotation key>",
//	 "handshake": "<value>" | null (absent), "resource": "<count resource>", "allocatable": "<quantity>" | null}
//	{"op": "bench", "function": "decode_legacy" | ..., "value" | "devices": ..., "min_seconds": 0.2, "repeat": 5,
//	 "clock": "wall" | "cpu"}
//
// Responses: {"ok": true, "devices": [...] | null} with every key written (a nil list is null, an empty
// one []), {"ok": true, "pair_scores": [{"uuid", "score"}, ...] | null} (a nil score map is null),
// {"ok": true, "value": "<str>"} (or "value_b64" when the bytes are not valid UTF-8),
// {"ok": true, "health": {...}}, {"ok": true, "bench": {...}}, {"ok": false, "error": "<Go error text>"},
// {"ok": false, "panic": "<recovered panic>"}, or {"ok": false, "request_error": "..."} when the request
// itself is malformed.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/Project-HAMi/HAMi/pkg/device"
	"github.com/Project-HAMi/HAMi/pkg/util"
	"github.com/Project-HAMi/HAMi/pkg/util/client"
)

// inDevice is a device as the Python side describes it, with the protocol's JSON keys.
type inDevice struct {
	ID           string              `json:"id"`
	Index        uint                `json:"index"`
	Count        int32               `json:"count"`
	Devmem       int32               `json:"devmem"`
	Devcore      int32               `json:"devcore"`
	Type         string              `json:"type"`
	Numa         int                 `json:"numa"`
	Mode         string              `json:"mode"`
	Health       bool                `json:"health"`
	MigProfiles  []device.MigProfile `json:"migProfiles"`
	DeviceVendor string              `json:"devicevendor"`
	CustomInfo   map[string]any      `json:"custominfo"`
}

// outDevice is a decoded device with every key written out, zero values included.
type outDevice struct {
	ID           string              `json:"id"`
	Index        uint                `json:"index"`
	Count        int32               `json:"count"`
	Devmem       int32               `json:"devmem"`
	Devcore      int32               `json:"devcore"`
	Type         string              `json:"type"`
	Numa         int                 `json:"numa"`
	Mode         string              `json:"mode"`
	MigProfiles  []device.MigProfile `json:"migProfiles"`
	MigTemplate  []device.Geometry   `json:"migtemplate"`
	Health       bool                `json:"health"`
	DeviceVendor string              `json:"devicevendor"`
	CustomInfo   map[string]any      `json:"custominfo"`
}

// outPairScore is one decoded DevicePairScore, both keys written (its own tags omit empty ones).
type outPairScore struct {
	ID     string         `json:"uuid"`
	Scores map[string]int `json:"score"`
}

type healthRequest struct {
	Vendor       string  `json:"vendor"`
	HandshakeKey string  `json:"handshake_key"`
	Handshake    *string `json:"handshake"`
	Resource     string  `json:"resource"`
	Allocatable  *string `json:"allocatable"`
}

type healthAnswer struct {
	// CheckHealth's two results: the device is healthy; the handshake was (to be) re-stamped.
	Healthy    bool `json:"healthy"`
	NeedUpdate bool `json:"need_update"`
	// The handshake annotation on the fake API server's Node after the call (null: absent).
	HandshakeAfter *string `json:"handshake_after"`
	// The verbs HAMi sent to the API server, in order ("get", "patch").
	Actions []string `json:"actions"`
	// The clock around the call, in this process's zone (HAMi reads time.Now() and time.Local).
	NowBefore string `json:"now_before"`
	NowAfter  string `json:"now_after"`
	Zone      string `json:"zone"`
}

type benchAnswer struct {
	Iterations int       `json:"iterations"`
	NsPerOp    []float64 `json:"ns_per_op"`
}

type request struct {
	Op         string      `json:"op"`
	Value      *string     `json:"value"`
	ValueB64   *string     `json:"value_b64"`
	Devices    []*inDevice `json:"devices"`
	Function   string      `json:"function"`
	MinSeconds float64     `json:"min_seconds"`
	Repeat     int         `json:"repeat"`
	Clock      string      `json:"clock"`
	healthRequest
}

type response struct {
	OK           bool            `json:"ok"`
	Devices      *[]outDevice    `json:"devices,omitempty"`
	PairScores   *[]outPairScore `json:"pair_scores,omitempty"`
	Value        *string         `json:"value,omitempty"`
	ValueB64     *string         `json:"value_b64,omitempty"`
	Health       *healthAnswer   `json:"health,omitempty"`
	Bench        *benchAnswer    `json:"bench,omitempty"`
	Error        *string         `json:"error,omitempty"`
	Panic        *string         `json:"panic,omitempty"`
	RequestError *string         `json:"request_error,omitempty"`
}

func requestError(format string, args ...any) response {
	text := fmt.Sprintf(format, args...)
	return response{RequestError: &text}
}

// describe turns decoded records into the response list. It dereferences every element, as every HAMi
// caller of the decoders does (GetNodeDevices sets the vendor on each), so a nil element panics here.
func describe(devices []*device.DeviceInfo) *[]outDevice {
	var out []outDevice
	if devices != nil {
		out = make([]outDevice, 0, len(devices))
	}
	for _, d := range devices {
		out = append(out, outDevice{
			ID: d.ID, Index: d.Index, Count: d.Count, Devmem: d.Devmem, Devcore: d.Devcore, Type: d.Type,
			Numa: d.Numa, Mode: d.Mode, MigProfiles: d.MIGProfiles, MigTemplate: d.MIGTemplate,
			Health: d.Health, DeviceVendor: d.DeviceVendor, CustomInfo: d.CustomInfo,
		})
	}
	return &out
}

// records builds HAMi records from the request's devices; a JSON null element stays a nil pointer.
func records(devices []*inDevice) []*device.DeviceInfo {
	out := make([]*device.DeviceInfo, 0, len(devices))
	for _, d := range devices {
		if d == nil {
			out = append(out, nil)
			continue
		}
		out = append(out, &device.DeviceInfo{
			ID: d.ID, Index: d.Index, Count: d.Count, Devmem: d.Devmem, Devcore: d.Devcore, Type: d.Type,
			Numa: d.Numa, Mode: d.Mode, Health: d.Health, MIGProfiles: d.MigProfiles,
			DeviceVendor: d.DeviceVendor, CustomInfo: d.CustomInfo,
		})
	}
	return out
}

func encoded(text string) response {
	if utf8.ValidString(text) {
		return response{OK: true, Value: &text}
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(text))
	return response{OK: true, ValueB64: &b64}
}

func decoded(devices []*device.DeviceInfo, err error) response {
	if err != nil {
		text := err.Error()
		return response{Error: &text}
	}
	return response{OK: true, Devices: describe(devices)}
}

func pairScores(scores *device.DevicePairScores, err error) response {
	if err != nil {
		text := err.Error()
		return response{Error: &text}
	}
	var out []outPairScore
	if *scores != nil {
		out = make([]outPairScore, 0, len(*scores))
	}
	for _, s := range *scores {
		out = append(out, outPairScore{ID: s.ID, Scores: s.Scores})
	}
	return response{OK: true, PairScores: &out}
}

func (q *request) text() (string, error) {
	switch {
	case q.Value != nil && q.ValueB64 != nil:
		return "", errors.New("give either value or value_b64, not both")
	case q.Value != nil:
		return *q.Value, nil
	case q.ValueB64 != nil:
		raw, err := base64.StdEncoding.DecodeString(*q.ValueB64)
		if err != nil {
			return "", fmt.Errorf("value_b64: %w", err)
		}
		return string(raw), nil
	}
	return "", errors.New("missing value (or value_b64)")
}

// checkHealth runs device.CheckHealth on a Node built from the request, with HAMi's global client
// pointed at a fake clientset that holds that Node.
func checkHealth(q *request) response {
	if q.Vendor == "" || q.HandshakeKey == "" || q.Resource == "" {
		return requestError("check_health needs vendor, handshake_key and resource")
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "oracle-node", Annotations: map[string]string{}}}
	if q.Handshake != nil {
		node.Annotations[q.HandshakeKey] = *q.Handshake
	}
	if q.Allocatable != nil {
		quantity, err := resource.ParseQuantity(*q.Allocatable)
		if err != nil {
			return requestError("allocatable: %v", err)
		}
		node.Status.Allocatable = corev1.ResourceList{corev1.ResourceName(q.Resource): quantity}
	}
	clientset := fake.NewClientset(node.DeepCopy())
	client.KubeClient = clientset
	util.HandshakeAnnos[q.Vendor] = q.HandshakeKey
	defer delete(util.HandshakeAnnos, q.Vendor)

	before := time.Now()
	healthy, needUpdate := device.CheckHealth(q.Vendor, q.Resource, node)
	after := time.Now()

	answer := &healthAnswer{
		Healthy: healthy, NeedUpdate: needUpdate, Actions: []string{},
		NowBefore: before.Format(time.RFC3339Nano), NowAfter: after.Format(time.RFC3339Nano),
		Zone: time.Local.String(),
	}
	for _, action := range clientset.Actions() {
		answer.Actions = append(answer.Actions, action.GetVerb())
	}
	stored, err := clientset.CoreV1().Nodes().Get(context.Background(), node.Name, metav1.GetOptions{})
	if err != nil {
		return requestError("reading the node back: %v", err)
	}
	if value, ok := stored.Annotations[q.HandshakeKey]; ok {
		answer.HandshakeAfter = &value
	}
	return response{OK: true, Health: answer}
}

// sink keeps the benchmarked results alive so the compiler cannot drop the calls.
var sink any

// cpuTime is the CPU time this process has used (user and system, every thread: Go's garbage collector
// included), which a busy shared machine disturbs far less than the wall clock.
func cpuTime() time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		panic(fmt.Sprintf("getrusage: %v", err))
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}

func wallTime() time.Duration {
	return time.Duration(time.Now().UnixNano())
}

// bench times one codec function in this process: the iteration count doubles until one run takes
// min_seconds, then that many iterations are timed repeat times, on the wall clock or in CPU time.
func bench(q *request) response {
	var call func()
	switch q.Function {
	case "decode_legacy", "decode_json":
		value, err := q.text()
		if err != nil {
			return requestError("bench: %v", err)
		}
		if q.Function == "decode_legacy" {
			call = func() { sink, _ = device.DecodeNodeDevices(value) }
		} else {
			call = func() { sink, _ = device.UnMarshalNodeDevices(value) }
		}
	case "encode_legacy", "encode_json":
		devices := records(q.Devices)
		if q.Function == "encode_legacy" {
			call = func() { sink = device.EncodeNodeDevices(devices) }
		} else {
			call = func() { sink = device.MarshalNodeDevices(devices) }
		}
	default:
		return requestError("bench: unknown function %q", q.Function)
	}
	if q.MinSeconds <= 0 || q.Repeat <= 0 {
		return requestError("bench needs min_seconds > 0 and repeat > 0")
	}
	clock := wallTime
	switch q.Clock {
	case "cpu":
		clock = cpuTime
	case "wall", "":
	default:
		return requestError("bench: unknown clock %q (wall or cpu)", q.Clock)
	}
	minimum := time.Duration(q.MinSeconds * float64(time.Second))
	timed := func(n int) time.Duration {
		start := clock()
		for i := 0; i < n; i++ {
			call()
		}
		return clock() - start
	}
	n := 1
	for timed(n) < minimum && n < 1<<30 {
		n *= 2
	}
	answer := &benchAnswer{Iterations: n}
	for r := 0; r < q.Repeat; r++ {
		answer.NsPerOp = append(answer.NsPerOp, float64(timed(n).Nanoseconds())/float64(n))
	}
	return response{OK: true, Bench: answer}
}

// answer runs one request; a panic inside HAMi's code is recovered into a "panic" response.
func answer(q *request) (r response) {
	defer func() {
		if p := recover(); p != nil {
			text := fmt.Sprint(p)
			r = response{Panic: &text}
		}
	}()
	switch q.Op {
	case "decode_legacy", "decode_json":
		if q.Devices != nil {
			return requestError("%s takes a value, not devices", q.Op)
		}
		value, err := q.text()
		if err != nil {
			return requestError("%s: %v", q.Op, err)
		}
		if q.Op == "decode_legacy" {
			return decoded(device.DecodeNodeDevices(value))
		}
		return decoded(device.UnMarshalNodeDevices(value))
	case "decode_pair_scores":
		value, err := q.text()
		if err != nil {
			return requestError("%s: %v", q.Op, err)
		}
		return pairScores(device.DecodePairScores(value))
	case "encode_legacy", "encode_json":
		if q.Value != nil || q.ValueB64 != nil {
			return requestError("%s takes devices, not a value", q.Op)
		}
		if q.Op == "encode_legacy" {
			return encoded(device.EncodeNodeDevices(records(q.Devices)))
		}
		return encoded(device.MarshalNodeDevices(records(q.Devices)))
	case "check_health":
		return checkHealth(q)
	case "bench":
		return bench(q)
	}
	return requestError("unknown op %q", q.Op)
}

func parse(line []byte) (*request, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var q request
	if err := dec.Decode(&q); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the request object")
	}
	return &q, nil
}

func serve(in io.Reader, out io.Writer) error {
	reader := bufio.NewReaderSize(in, 1<<20)
	writer := bufio.NewWriter(out)
	enc := json.NewEncoder(writer)
	enc.SetEscapeHTML(false)
	for {
		line, readErr := reader.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var r response
			if q, err := parse(line); err != nil {
				r = requestError("malformed request line: %v", err)
			} else {
				r = answer(q)
			}
			if err := enc.Encode(r); err != nil {
				return fmt.Errorf("writing response: %w", err)
			}
			if err := writer.Flush(); err != nil {
				return fmt.Errorf("writing response: %w", err)
			}
		}
		if readErr == io.EOF {
			return nil
		}
		if readErr != nil {
			return fmt.Errorf("reading request: %w", readErr)
		}
	}
}

func main() {
	if err := serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "hami-oracle:", err)
		os.Exit(1)
	}
}
