// Command hami-node-oracle answers, Node by Node, what HAMi v2.10.0's scheduler registers: it sets HAMi's
// devices up from a device config exactly as HAMi's scheduler does, then calls every vendor's real
// GetNodeDevices and CheckHealth on the Nodes it is given.
//
// This file is the project's; HAMi is not copied into the repository. scripts/build-oracle.sh copies
// HAMi's unmodified tree (shared/hami/v2.10.0) into a cache directory outside the clone, puts this file
// there as cmd/hami-node-oracle/main.go and builds it with HAMi's own go.mod and go.sum.
//
// Setup, as HAMi's scheduler (cmd/scheduler/main.go): the flag set is config.GlobalFlagSet() (every
// vendor's ParseConfig); --enable-ascend and --enable-iluvatar are set through it as the request says;
// the device config is read by config.LoadConfig from a file and installed by
// config.InitDevicesWithConfig, which fills device.DevicesMap (and util.HandshakeAnnos). HAMi's global
// Kubernetes client (pkg/util/client.KubeClient, what util.GetNode and util.PatchNodeAnnotations use) is
// client-go's fake clientset holding the Node, so the handshake stamp of the generic CheckHealth lands in
// the fake and is read back.
//
// Protocol: JSON Lines. One request per stdin line, one response per stdout line, flushed each time.
//
//	{"op": "nodes", "config": "<device-config YAML>", "enable_ascend": bool, "enable_iluvatar": bool,
//	 "fresh": bool, "nodes": [<v1.Node JSON>, ...]}
//
// The config is read once per request (LoadConfig). fresh true: a new device set
// (InitDevicesWithConfig) for each Node, so no vendor's state
// (NVIDIA's ReportedGPUNum, AWS Neuron's cores per device) carries from one Node to the next; false: one
// device set for the whole list, in order, as one HAMi scheduler process sees them.
//
// Response: {"ok": true, "keys": [every vendor key HAMi registered, sorted], "results": [per Node:
// {"node": name, "now_before", "now_after", "vendors": {key: answer}}]}, where an answer is
//
//	{"devices": [...] | null, "error": "<GetNodeDevices error>" | null, "panic": "<recovered>" | null,
//	 "healthy": bool, "need_update": bool, "health_panic": ... | null,
//	 "handshake_key": "<util.HandshakeAnnos[key]>" | null, "actions": ["get", "patch"],
//	 "handshake_after": "<value on the fake server afterwards>" | null}
//
// Devices have every key written (zero values included) and "pair_score": {"uuid", "score"} (HAMi's
// DevicePairScore, which its JSON tags hide). A GetNodeDevices panic (the JSON null element) skips that
// vendor's CheckHealth, as HAMi's scheduler would have crashed before it. {"ok": false, "init_error":
// "..."} when LoadConfig or InitDevicesWithConfig fails (HAMi's scheduler exits then), {"ok": false,
// "request_error": "..."} for a malformed request.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"

	"github.com/Project-HAMi/HAMi/pkg/device"
	"github.com/Project-HAMi/HAMi/pkg/scheduler/config"
	"github.com/Project-HAMi/HAMi/pkg/util"
	"github.com/Project-HAMi/HAMi/pkg/util/client"
)

type pairScore struct {
	ID     string         `json:"uuid"`
	Scores map[string]int `json:"score"`
}

// outDevice is a registered device with every key written out, zero values included.
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
	Health       bool                `json:"health"`
	DeviceVendor string              `json:"devicevendor"`
	CustomInfo   map[string]any      `json:"custominfo"`
	PairScore    pairScore           `json:"pair_score"`
}

type vendorAnswer struct {
	Devices        *[]outDevice `json:"devices"`
	Error          *string      `json:"error"`
	Panic          *string      `json:"panic"`
	Healthy        bool         `json:"healthy"`
	NeedUpdate     bool         `json:"need_update"`
	HealthPanic    *string      `json:"health_panic"`
	HandshakeKey   *string      `json:"handshake_key"`
	Actions        []string     `json:"actions"`
	HandshakeAfter *string      `json:"handshake_after"`
}

type nodeResult struct {
	Node      string                   `json:"node"`
	NowBefore string                   `json:"now_before"`
	NowAfter  string                   `json:"now_after"`
	Vendors   map[string]*vendorAnswer `json:"vendors"`
}

type request struct {
	Op             string            `json:"op"`
	Config         string            `json:"config"`
	EnableAscend   bool              `json:"enable_ascend"`
	EnableIluvatar bool              `json:"enable_iluvatar"`
	Fresh          bool              `json:"fresh"`
	Nodes          []json.RawMessage `json:"nodes"`
}

type response struct {
	OK           bool         `json:"ok"`
	Keys         []string     `json:"keys,omitempty"`
	Results      []nodeResult `json:"results,omitempty"`
	InitError    *string      `json:"init_error,omitempty"`
	RequestError *string      `json:"request_error,omitempty"`
}

func text(format string, args ...any) *string {
	s := fmt.Sprintf(format, args...)
	return &s
}

// flags is HAMi's scheduler flag set (config.GlobalFlagSet), made once: it registers every vendor's
// flags, --enable-ascend and --enable-iluvatar among them, and klog's.
var flags = config.GlobalFlagSet()

// configDir holds the device configs written for LoadConfig, one file per distinct text.
var configDir string

func configFile(yaml string) (string, error) {
	sum := sha256.Sum256([]byte(yaml))
	path := filepath.Join(configDir, hex.EncodeToString(sum[:8])+".yaml")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	return path, os.WriteFile(path, []byte(yaml), 0o600)
}

// loadConfig is the first half of HAMi's scheduler start-up (config.InitDevices without its klog.Fatalf):
// the flags, then LoadConfig on the device config file.
func loadConfig(q *request) (*config.Config, error) {
	if err := flags.Set("enable-ascend", strconv.FormatBool(q.EnableAscend)); err != nil {
		return nil, err
	}
	if err := flags.Set("enable-iluvatar", strconv.FormatBool(q.EnableIluvatar)); err != nil {
		return nil, err
	}
	path, err := configFile(q.Config)
	if err != nil {
		return nil, fmt.Errorf("writing the device config: %w", err)
	}
	cfg, err := config.LoadConfig(path)
	if err != nil {
		return nil, fmt.Errorf("LoadConfig: %w", err)
	}
	return cfg, nil
}

// initDevices is the second half: InitDevicesWithConfig, which builds a new device set (device.DevicesMap)
// from the loaded config.
func initDevices(cfg *config.Config) error {
	if err := config.InitDevicesWithConfig(cfg); err != nil {
		return fmt.Errorf("InitDevicesWithConfig: %w", err)
	}
	return nil
}

func describe(devices []*device.DeviceInfo) *[]outDevice {
	var out []outDevice
	if devices != nil {
		out = make([]outDevice, 0, len(devices))
	}
	for _, d := range devices {
		out = append(out, outDevice{
			ID: d.ID, Index: d.Index, Count: d.Count, Devmem: d.Devmem, Devcore: d.Devcore, Type: d.Type,
			Numa: d.Numa, Mode: d.Mode, MigProfiles: d.MIGProfiles, Health: d.Health,
			DeviceVendor: d.DeviceVendor, CustomInfo: d.CustomInfo,
			PairScore: pairScore{ID: d.DevicePairScore.ID, Scores: d.DevicePairScore.Scores},
		})
	}
	return &out
}

func getNodeDevices(dev device.Devices, node *corev1.Node, answer *vendorAnswer) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			answer.Panic = text("%v", r)
			ok = false
		}
	}()
	devices, err := dev.GetNodeDevices(*node)
	if err != nil {
		answer.Error = text("%s", err.Error())
	}
	// describe dereferences every element, as HAMi's register loop does.
	answer.Devices = describe(devices)
	return true
}

func checkHealth(dev device.Devices, key string, node *corev1.Node, answer *vendorAnswer) {
	defer func() {
		if r := recover(); r != nil {
			answer.HealthPanic = text("%v", r)
		}
	}()
	answer.Healthy, answer.NeedUpdate = dev.CheckHealth(key, node)
}

// register runs, for one Node, what HAMi's register loop (pkg/scheduler/scheduler.go) calls for every
// vendor: GetNodeDevices, then CheckHealth, against a fake API server holding the Node (its quantities
// as the API server stores them).
func register(raw json.RawMessage) (nodeResult, error) {
	node := &corev1.Node{}
	if err := json.Unmarshal(raw, node); err != nil {
		return nodeResult{}, fmt.Errorf("node: %w", err)
	}
	if node.Name == "" {
		return nodeResult{}, errors.New("node: metadata.name is empty")
	}
	if err := asStored(node.Status.Capacity); err != nil {
		return nodeResult{}, fmt.Errorf("node %s: status.capacity: %w", node.Name, err)
	}
	if err := asStored(node.Status.Allocatable); err != nil {
		return nodeResult{}, fmt.Errorf("node %s: status.allocatable: %w", node.Name, err)
	}
	clientset := fake.NewSimpleClientset(node.DeepCopy()) // lighter than NewClientset (no field manager)
	client.KubeClient = clientset
	keys := sortedKeys()
	result := nodeResult{Node: node.Name, Vendors: map[string]*vendorAnswer{}}
	result.NowBefore = time.Now().Format(time.RFC3339Nano)
	for _, key := range keys {
		dev := device.DevicesMap[key]
		answer := &vendorAnswer{Actions: []string{}}
		if hk, ok := util.HandshakeAnnos[key]; ok {
			answer.HandshakeKey = &hk
		}
		seen := len(clientset.Actions())
		if getNodeDevices(dev, node, answer) {
			checkHealth(dev, key, node, answer)
		}
		for _, action := range clientset.Actions()[seen:] {
			answer.Actions = append(answer.Actions, action.GetVerb())
		}
		result.Vendors[key] = answer
	}
	result.NowAfter = time.Now().Format(time.RFC3339Nano)
	stored, err := clientset.CoreV1().Nodes().Get(context.Background(), node.Name, metav1.GetOptions{})
	if err != nil {
		return nodeResult{}, fmt.Errorf("reading the node back: %w", err)
	}
	for _, answer := range result.Vendors {
		if answer.HandshakeKey == nil {
			continue
		}
		if value, ok := stored.Annotations[*answer.HandshakeKey]; ok {
			answer.HandshakeAfter = &value
		}
	}
	return result, nil
}

// asStored gives each quantity the form HAMi's lister sees: the API server stores a quantity as its
// canonical string (Quantity's JSON encoding) and serves that, so "16000m" reaches HAMi as "16" (and
// AsInt64, which refuses a negative scale, then reads 16).
func asStored(list corev1.ResourceList) error {
	for name, quantity := range list {
		stored, err := resource.ParseQuantity(quantity.String())
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		list[name] = stored
	}
	return nil
}

func sortedKeys() []string {
	keys := make([]string, 0, len(device.DevicesMap))
	for key := range device.DevicesMap {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}

func answer(q *request) response {
	if q.Op != "nodes" {
		return response{RequestError: text("unknown op %q", q.Op)}
	}
	cfg, err := loadConfig(q)
	if err != nil {
		return response{InitError: text("%s", err.Error())}
	}
	if err := initDevices(cfg); err != nil {
		return response{InitError: text("%s", err.Error())}
	}
	out := response{OK: true, Keys: sortedKeys(), Results: make([]nodeResult, 0, len(q.Nodes))}
	for i, raw := range q.Nodes {
		if q.Fresh && i > 0 {
			if err := initDevices(cfg); err != nil {
				return response{InitError: text("%s", err.Error())}
			}
		}
		result, err := register(raw)
		if err != nil {
			return response{RequestError: text("nodes[%d]: %v", i, err)}
		}
		out.Results = append(out.Results, result)
	}
	return out
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
				r = response{RequestError: text("malformed request line: %v", err)}
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
	// HAMi logs every device set it builds at Info level; HAMI_NODE_ORACLE_LOG=1 keeps that on stderr.
	if os.Getenv("HAMI_NODE_ORACLE_LOG") == "" {
		klog.LogToStderr(false)
		klog.SetOutput(io.Discard)
	}
	if path := os.Getenv("HAMI_NODE_ORACLE_CPUPROFILE"); path != "" {
		out, err := os.Create(path)
		if err == nil && pprof.StartCPUProfile(out) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	dir, err := os.MkdirTemp("", "hami-node-oracle-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "hami-node-oracle:", err)
		os.Exit(1)
	}
	configDir = dir
	err = serve(os.Stdin, os.Stdout)
	os.RemoveAll(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hami-node-oracle:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}
