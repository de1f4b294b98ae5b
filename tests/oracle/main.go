// Command hami-oracle answers codec questions the way HAMi v2.10.0's scheduler-side codecs do, so the
// Python test suite can compare its own codecs with Go's behaviour, value by value.
//
// HAMi's module is not served by the module proxy this project can reach, so the four codec functions
// are re-stated here from the protocol spec (shared/spec section 3, shared/notes sections 2-3)
// on top of the same Go standard library HAMi uses: encoding/json for the JSON encoding (including its
// case-folded key matching, duplicate keys, integer ranges and HTML-safe escaping) and strconv for the
// legacy colon encoding. The record types carry exactly HAMi's field names, Go types and JSON tags,
// because those decide how encoding/json treats every key.
//
// Protocol: JSON Lines. One request per stdin line, one response per stdout line, flushed each time.
//
//	{"op": "decode_legacy" | "decode_json", "value": "<str>"}          (or "value_b64": "<base64 bytes>")
//	{"op": "encode_legacy" | "encode_json", "devices": [<device>|null, ...]}
//
// Responses: {"ok": true, "devices": [...] | null} with every key written out (a nil list is null, an
// empty one []), {"ok": true, "value": "<str>"} (or "value_b64" when the bytes are not valid UTF-8),
// {"ok": false, "error": "<Go error text>"}, {"ok": false, "panic": "<recovered panic>"}, or
// {"ok": false, "request_error": "..."} when the request itself is malformed.
package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ---- HAMi's record shape (field names, Go types and JSON tags are the wire format) ----

type MigPlacement struct {
	Start uint32 `json:"start"`
	Size  uint32 `json:"size"`
}

type MigProfile struct {
	Name          string         `json:"name"`
	MemoryMB      int32          `json:"memoryMB"`
	Core          int32          `json:"core"`
	SliceCount    uint32         `json:"sliceCount"`
	Placements    []MigPlacement `json:"placements"`
	InstanceCount uint32         `json:"-"`
}

// MigTemplate has no JSON tags in HAMi: its JSON keys are the Go field names.
type MigTemplate struct {
	Name   string
	Core   int32
	Memory int32
	Count  int32
}

type DevicePairScore struct {
	ID     string         `json:"uuid,omitempty"`
	Scores map[string]int `json:"score,omitempty"`
}

type DeviceInfo struct {
	ID              string          `json:"id,omitempty"`
	Index           uint            `json:"index,omitempty"`
	Count           int32           `json:"count,omitempty"`
	Devmem          int32           `json:"devmem,omitempty"`
	Devcore         int32           `json:"devcore,omitempty"`
	Type            string          `json:"type,omitempty"`
	Numa            int             `json:"numa,omitempty"`
	Mode            string          `json:"mode,omitempty"`
	MIGProfiles     []MigProfile    `json:"migProfiles,omitempty"`
	MIGTemplate     [][]MigTemplate `json:"migtemplate,omitempty"`
	Health          bool            `json:"health,omitempty"`
	DeviceVendor    string          `json:"devicevendor,omitempty"`
	CustomInfo      map[string]any  `json:"custominfo,omitempty"`
	DevicePairScore DevicePairScore `json:"-"`
}

// ---- the four codec functions (HAMi v2.10.0 behaviour) ----

const (
	deviceSeparator = ":"
	fieldSeparator  = ","
)

// decodeNodeDevices is the legacy colon decoder (HAMi's device.DecodeNodeDevices): strict since v2.10.0,
// the first failure discards the whole value.
func decodeNodeDevices(value string) ([]*DeviceInfo, error) {
	if !strings.Contains(value, deviceSeparator) {
		return nil, errors.New("node annotation missing device separator")
	}
	var out []*DeviceInfo
	for _, segment := range strings.Split(value, deviceSeparator) {
		if segment == "" {
			continue
		}
		if !strings.Contains(segment, fieldSeparator) {
			return nil, fmt.Errorf("malformed node annotation segment: %q", segment)
		}
		f := strings.Split(segment, fieldSeparator)
		if len(f) != 7 && len(f) != 9 {
			return nil, fmt.Errorf("unexpected field count %d in node annotation", len(f))
		}
		dev, err := legacyRecord(f)
		if err != nil {
			return nil, err
		}
		out = append(out, dev)
	}
	return out, nil
}

// legacyRecord parses one 7- or 9-field record; the parse order (count, devmem, devcore, health, numa,
// index) decides which error is reported.
func legacyRecord(f []string) (*DeviceInfo, error) {
	count, err := strconv.ParseInt(f[1], 10, 32)
	if err != nil {
		return nil, fmt.Errorf("invalid count field: %w", err)
	}
	devmem, err := strconv.ParseInt(f[2], 10, 32)
	if err != nil {
		return nil, fmt.Errorf("invalid memory field: %w", err)
	}
	devcore, err := strconv.ParseInt(f[3], 10, 32)
	if err != nil {
		return nil, fmt.Errorf("invalid core field: %w", err)
	}
	health, err := strconv.ParseBool(f[6])
	if err != nil {
		return nil, fmt.Errorf("invalid health field: %w", err)
	}
	numa, err := strconv.Atoi(f[5])
	if err != nil {
		return nil, fmt.Errorf("invalid numa field: %w", err)
	}
	dev := &DeviceInfo{
		ID:      f[0],
		Count:   int32(count),
		Devmem:  int32(devmem),
		Devcore: int32(devcore),
		Type:    f[4],
		Numa:    numa,
		Health:  health,
		Mode:    "hami-core",
	}
	if len(f) == 9 {
		index, err := strconv.Atoi(f[7])
		if err != nil {
			return nil, fmt.Errorf("invalid index field: %w", err)
		}
		if index < 0 {
			return nil, fmt.Errorf("index field must not be negative: %d", index)
		}
		dev.Index = uint(index)
		dev.Mode = f[8]
	}
	return dev, nil
}

// encodeNodeDevices is the legacy colon encoder (HAMi's device.EncodeNodeDevices): 9 fields and a ':'
// per device, nothing escaped, the index written as a signed Go int.
func encodeNodeDevices(devices []*DeviceInfo) string {
	var b strings.Builder
	for _, d := range devices {
		fields := []string{
			d.ID,
			strconv.FormatInt(int64(d.Count), 10),
			strconv.Itoa(int(d.Devmem)),
			strconv.Itoa(int(d.Devcore)),
			d.Type,
			strconv.Itoa(d.Numa),
			strconv.FormatBool(d.Health),
			strconv.Itoa(int(d.Index)),
			d.Mode,
		}
		b.WriteString(strings.Join(fields, fieldSeparator))
		b.WriteString(deviceSeparator)
	}
	return b.String()
}

// unMarshalNodeDevices is the JSON decoder (HAMi's device.UnMarshalNodeDevices): plain json.Unmarshal
// into a list of record pointers.
func unMarshalNodeDevices(value string) ([]*DeviceInfo, error) {
	var devices []*DeviceInfo
	err := json.Unmarshal([]byte(value), &devices)
	return devices, err
}

// marshalNodeDevices is the JSON encoder (HAMi's device.MarshalNodeDevices): only the scheduler-visible
// fields are copied into fresh records (no vendor, custom info, MIG template or pair score).
func marshalNodeDevices(devices []*DeviceInfo) string {
	visible := make([]*DeviceInfo, 0, len(devices))
	for _, d := range devices {
		visible = append(visible, &DeviceInfo{
			ID:          d.ID,
			Index:       d.Index,
			Count:       d.Count,
			Devmem:      d.Devmem,
			Devcore:     d.Devcore,
			Type:        d.Type,
			Numa:        d.Numa,
			Mode:        d.Mode,
			MIGProfiles: d.MIGProfiles,
			Health:      d.Health,
		})
	}
	data, err := json.Marshal(visible)
	if err != nil {
		return ""
	}
	return string(data)
}

// ---- the line protocol ----

// inDevice is a device as the Python side describes it, with the protocol's JSON keys.
type inDevice struct {
	ID           string         `json:"id"`
	Index        uint           `json:"index"`
	Count        int32          `json:"count"`
	Devmem       int32          `json:"devmem"`
	Devcore      int32          `json:"devcore"`
	Type         string         `json:"type"`
	Numa         int            `json:"numa"`
	Mode         string         `json:"mode"`
	Health       bool           `json:"health"`
	MigProfiles  []MigProfile   `json:"migProfiles"`
	DeviceVendor string         `json:"devicevendor"`
	CustomInfo   map[string]any `json:"custominfo"`
}

// outDevice is a decoded device with every key written out, zero values included.
type outDevice struct {
	ID           string          `json:"id"`
	Index        uint            `json:"index"`
	Count        int32           `json:"count"`
	Devmem       int32           `json:"devmem"`
	Devcore      int32           `json:"devcore"`
	Type         string          `json:"type"`
	Numa         int             `json:"numa"`
	Mode         string          `json:"mode"`
	MigProfiles  []MigProfile    `json:"migProfiles"`
	MigTemplate  [][]MigTemplate `json:"migtemplate"`
	Health       bool            `json:"health"`
	DeviceVendor string          `json:"devicevendor"`
	CustomInfo   map[string]any  `json:"custominfo"`
}

type request struct {
	Op       string      `json:"op"`
	Value    *string     `json:"value"`
	ValueB64 *string     `json:"value_b64"`
	Devices  []*inDevice `json:"devices"`
}

type response struct {
	OK           bool         `json:"ok"`
	Devices      *[]outDevice `json:"devices,omitempty"`
	Value        *string      `json:"value,omitempty"`
	ValueB64     *string      `json:"value_b64,omitempty"`
	Error        *string      `json:"error,omitempty"`
	Panic        *string      `json:"panic,omitempty"`
	RequestError *string      `json:"request_error,omitempty"`
}

func requestError(format string, args ...any) response {
	text := fmt.Sprintf(format, args...)
	return response{RequestError: &text}
}

// describe turns decoded records into the response list. It dereferences every element, as every HAMi
// caller of the decoders does (GetNodeDevices sets the vendor on each), so a nil element panics here.
func describe(devices []*DeviceInfo) *[]outDevice {
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
func records(devices []*inDevice) []*DeviceInfo {
	out := make([]*DeviceInfo, 0, len(devices))
	for _, d := range devices {
		if d == nil {
			out = append(out, nil)
			continue
		}
		out = append(out, &DeviceInfo{
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

func decoded(devices []*DeviceInfo, err error) response {
	if err != nil {
		text := err.Error()
		return response{Error: &text}
	}
	return response{OK: true, Devices: describe(devices)}
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

// answer runs one request; a panic inside the codec call is recovered into a "panic" response.
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
			return decoded(decodeNodeDevices(value))
		}
		return decoded(unMarshalNodeDevices(value))
	case "encode_legacy", "encode_json":
		if q.Value != nil || q.ValueB64 != nil {
			return requestError("%s takes devices, not a value", q.Op)
		}
		if q.Op == "encode_legacy" {
			return encoded(encodeNodeDevices(records(q.Devices)))
		}
		return encoded(marshalNodeDevices(records(q.Devices)))
	}
	return requestError("unknown op %q", q.Op)
}

func parse(line []byte) (*request, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	dec.UseNumber()
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
