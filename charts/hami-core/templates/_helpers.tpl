{{/* The chart's name (nameOverride wins). */}}
{{- define "hami-core.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* <release>-hami-core, or the release name when it already holds the chart name. */}}
{{- define "hami-core.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "hami-core.scheduler.fullname" -}}
{{- printf "%s-scheduler" (include "hami-core.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "hami-core.reporter.fullname" -}}
{{- printf "%s-reporter" (include "hami-core.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "hami-core.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of every object; pass a dict with "root" (the top context) and "component". */}}
{{- define "hami-core.labels" -}}
helm.sh/chart: {{ include "hami-core.chart" .root }}
{{ include "hami-core.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: hami-core
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "hami-core.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hami-core.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* [REGISTRY/]REPOSITORY:TAG, or [REGISTRY/]REPOSITORY@DIGEST when image.digest is set. The registry
     is global.imageRegistry when set (as HAMi's chart does for a parent chart), else image.registry. */}}
{{- define "hami-core.image" -}}
{{- $global := .Values.global | default dict -}}
{{- $registry := $global.imageRegistry | default .Values.image.registry -}}
{{- $repository := .Values.image.repository -}}
{{- if $registry -}}
{{- $repository = printf "%s/%s" (trimSuffix "/" $registry) $repository -}}
{{- end -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" $repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* imagePullSecrets: global.imagePullSecrets, then imagePullSecrets; each a name or {name: NAME};
     once each, in that order. */}}
{{- define "hami-core.imagePullSecrets" -}}
{{- $global := .Values.global | default dict -}}
{{- $names := list -}}
{{- range concat ($global.imagePullSecrets | default list) (.Values.imagePullSecrets | default list) -}}
{{- $name := "" -}}
{{- if kindIs "string" . -}}
{{- $name = . -}}
{{- else if kindIs "map" . -}}
{{- $name = .name -}}
{{- end -}}
{{- if and $name (not (has $name $names)) -}}
{{- $names = append $names $name -}}
{{- end -}}
{{- end -}}
{{- if $names }}
imagePullSecrets:
{{- range $names }}
  - name: {{ . }}
{{- end }}
{{- end -}}
{{- end -}}

{{/* Whether the scheduler is rendered: scheduler.replicas 0 leaves out every scheduler object. */}}
{{- define "hami-core.scheduler.enabled" -}}
{{- if gt (int .Values.scheduler.replicas) 0 }}true{{ end -}}
{{- end -}}

{{/* The ServiceAccount each daemon runs as: serviceAccount.name, or the component's full name. */}}
{{- define "hami-core.scheduler.serviceAccountName" -}}
{{- .Values.scheduler.serviceAccount.name | default (include "hami-core.scheduler.fullname" .) -}}
{{- end -}}

{{- define "hami-core.reporter.serviceAccountName" -}}
{{- .Values.reporter.serviceAccount.name | default (include "hami-core.reporter.fullname" .) -}}
{{- end -}}

{{/* A probe from its values (a dict of the probe's timings) and the HTTP path to ask. */}}
{{- define "hami-core.probe" -}}
httpGet:
  path: {{ .path }}
  port: http
{{- range $key := list "initialDelaySeconds" "periodSeconds" "timeoutSeconds" "failureThreshold" "successThreshold" }}
{{- if hasKey $.values $key }}
{{ $key }}: {{ get $.values $key }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The options both daemons share (driver selection, logging), as a JSON list; pass a dict with
     "root" and "vendors" (the daemon's driver list). */}}
{{- define "hami-core.commonArgs" -}}
{{- $args := list -}}
{{- with .vendors -}}
{{- $args = append $args (printf "--vendors=%s" (join "," .)) -}}
{{- end -}}
{{- $values := .root.Values -}}
{{- range $driver := keys $values.countResources | sortAlpha -}}
{{- $args = append $args (printf "--count-resource=%s=%s" $driver (get $values.countResources $driver)) -}}
{{- end -}}
{{- $args = append $args (printf "--log-format=%s" $values.log.format) -}}
{{- $args = append $args (printf "--log-level=%s" $values.log.level) -}}
{{- toJson $args -}}
{{- end -}}

{{/* A JSON list: ["--FLAG=VALUE"] for each of .options (a list of [flag, value]) whose value is set
     (a non-empty string or a non-zero number). */}}
{{- define "hami-core.optionalArgs" -}}
{{- $args := list -}}
{{- range .options -}}
{{- $value := index . 1 -}}
{{- if and (not (kindIs "invalid" $value)) (ne (toString $value) "") (ne (toString $value) "0") -}}
{{- $args = append $args (printf "--%s=%v" (index . 0) $value) -}}
{{- end -}}
{{- end -}}
{{- toJson $args -}}
{{- end -}}

{{/* HAMi's scheduler Lease as [namespace, name], or an empty list when the check is off. */}}
{{- define "hami-core.hamiLease" -}}
{{- if and .Values.scheduler.checkHamiLease (ne .Values.scheduler.checkHamiLease "off") -}}
{{- splitList "/" .Values.scheduler.checkHamiLease | toJson -}}
{{- else -}}
[]
{{- end -}}
{{- end -}}

{{/* A file under rbac/ without its comment lines: the rules as the harness reads them. */}}
{{- define "hami-core.rbacFile" -}}
{{- regexReplaceAll "(?m)^\\s*#.*\\n" (.root.Files.Get (printf "rbac/%s" .file)) "" | trim -}}
{{- end -}}

{{/* The scheduler's readiness path: scheduler.readinessPath, or when empty /readyz read-only (every
     replica is ready once synced) and /livez under leader election (the follower stays Ready). */}}
{{- define "hami-core.scheduler.readinessPath" -}}
{{- .Values.scheduler.readinessPath | default (ternary "/readyz" "/livez" .Values.scheduler.readOnly) -}}
{{- end -}}
