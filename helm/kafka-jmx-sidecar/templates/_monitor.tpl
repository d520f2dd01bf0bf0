{{/* jobLabel and the per-scrape limits, the same keys in both monitors' spec (0: no limit). */}}
{{- define "kafka-jmx-sidecar.monitorLimits" -}}
{{- with .jobLabel }}
jobLabel: {{ . | quote }}
{{- end }}
{{- with .sampleLimit }}
sampleLimit: {{ . }}
{{- end }}
{{- with .labelLimit }}
labelLimit: {{ . }}
{{- end }}
{{- end }}

{{/* The scrape settings ServiceMonitor endpoints and PodMonitor podMetricsEndpoints share. */}}
{{- define "kafka-jmx-sidecar.scrapeEndpoint" -}}
{{- $m := .monitor }}
port: metrics
path: /metrics
scheme: {{ include "kafka-jmx-sidecar.scheme" .root }}
{{- with $m.interval }}
interval: {{ . }}
{{- end }}
{{- with $m.scrapeTimeout }}
scrapeTimeout: {{ . }}
{{- end }}
honorLabels: {{ $m.honorLabels }}
{{- with $m.tlsConfig }}
tlsConfig:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $m.basicAuth }}
basicAuth:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with include "kafka-jmx-sidecar.monitorRelabelings" (dict "monitor" $m) }}
relabelings:
  {{- . | nindent 2 }}
{{- end }}
{{- with $m.metricRelabelings }}
metricRelabelings:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
