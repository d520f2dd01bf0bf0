{{/*
config.yml: the connection and the `sidecar:` key written from the values, followed by the rules
document (the shipped file by default). One YAML mapping: the rules document's keys
(lowercaseOutputName, includeObjectNames, rules, ...) never collide with the chart's.
*/}}
{{- define "kafka-jmx-sidecar.configFile" -}}
{{- $v := .Values }}
{{- $sidecar := deepCopy $v.settings }}
{{- $_ := set $sidecar "listenAddress" (printf "0.0.0.0:%v" $v.containerPort) }}
{{- if eq $v.mode "cluster" }}
{{- $_ := set $sidecar "mode" "cluster" }}
{{- end }}
{{- if $v.admin.bootstrapServers }}
{{- $_ := set $sidecar "admin" (merge (dict "bootstrapServers" $v.admin.bootstrapServers) (deepCopy $v.admin.extra)) }}
{{- end }}
{{- if $v.archive.enabled }}
{{- $_ := set $sidecar "archive" (dict "directory" "/var/lib/kafka-jmx-sidecar/archive" "retentionHours" $v.archive.retentionHours "retentionSize" $v.archive.retentionSize "keyframeIntervalSeconds" $v.archive.keyframeIntervalSeconds) }}
{{- end }}
# Written by the kafka-jmx-sidecar chart from its values (jmx.*, admin.*, settings, rules.*).
{{- if ne $v.mode "cluster" }}
{{- if $v.jmx.url }}
jmxUrl: {{ $v.jmx.url | quote }}
{{- else }}
hostPort: {{ $v.jmx.hostPort | quote }}
{{- end }}
{{- if $v.jmx.usernameSecret.name }}
username: ${JMX_USERNAME}
{{- else if $v.jmx.username }}
username: {{ $v.jmx.username | quote }}
{{- end }}
{{- if $v.jmx.passwordSecret.name }}
password: ${JMX_PASSWORD}
{{- end }}
{{- if $v.jmx.ssl.enabled }}
{{- if $v.jmx.ssl.trustStore.secretName }}
ssl:
  trustStore:
    filename: /etc/kafka-jmx-sidecar/secrets/truststore/{{ $v.jmx.ssl.trustStore.key }}
    {{- if $v.jmx.ssl.trustStore.passwordSecret.name }}
    password: ${TRUSTSTORE_PASSWORD}
    {{- end }}
{{- else }}
ssl: true
{{- end }}
{{- end }}
{{- end }}
{{ dict "sidecar" $sidecar | toYaml }}
{{- if $v.rules.inline }}
{{- /* a leading document marker (Confluent's file has one) would start a second document here */}}
{{ regexReplaceAll "\\A(---[^\n]*\n)?" $v.rules.inline "" }}
{{- else if eq $v.mode "cluster" }}
{{ .Files.Get "files/kafka-cluster.yml" }}
{{- else }}
{{ .Files.Get "files/kafka-health.yml" }}
{{- end }}
{{- end }}
