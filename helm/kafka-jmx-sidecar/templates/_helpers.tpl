{{/* Names and labels, as `helm create` names them. */}}
{{- define "kafka-jmx-sidecar.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kafka-jmx-sidecar.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "kafka-jmx-sidecar.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kafka-jmx-sidecar.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "kafka-jmx-sidecar.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "kafka-jmx-sidecar.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "kafka-jmx-sidecar.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kafka-jmx-sidecar.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* registry/repository:tag or @digest; the tag defaults to the chart's appVersion. */}}
{{- define "kafka-jmx-sidecar.imageRef" -}}
{{- $image := .image }}
{{- $ref := printf "%s/%s" $image.registry $image.repository | trimPrefix "/" }}
{{- if $image.digest }}
{{- printf "%s@%s" $ref $image.digest }}
{{- else }}
{{- printf "%s:%s" $ref (default .appVersion $image.tag) }}
{{- end }}
{{- end }}

{{/* The ConfigMap holding config.yml: the user's own, or the chart's (one per broker with brokers). */}}
{{- define "kafka-jmx-sidecar.configMapName" -}}
{{- default (include "kafka-jmx-sidecar.sidecarName" .) .Values.rules.existingConfigMap }}
{{- end }}

{{- define "kafka-jmx-sidecar.configMapKey" -}}
{{- if .Values.rules.existingConfigMap }}{{ .Values.rules.existingConfigMapKey }}{{ else }}config.yml{{ end }}
{{- end }}

{{/* "true" where OpenShift assigns the user, group and fsGroup (its restricted-v2 SCC refuses ids
outside the namespace's range): global.compatibility.openshift.adaptSecurityContext force, or auto
on a cluster serving the security.openshift.io/v1 API. */}}
{{- define "kafka-jmx-sidecar.adaptForOpenShift" -}}
{{- $adapt := (((.Values.global).compatibility).openshift).adaptSecurityContext | default "auto" }}
{{- if not (has $adapt (list "auto" "force" "disabled")) }}
{{- fail (printf "values: global.compatibility.openshift.adaptSecurityContext: %q; set auto, force or disabled" $adapt) }}
{{- end }}
{{- if or (eq $adapt "force") (and (eq $adapt "auto") (.Capabilities.APIVersions.Has "security.openshift.io/v1")) }}true{{ end }}
{{- end }}

{{/* A pod's or container's securityContext: (dict "root" $ "context" .Values.podSecurityContext).
Adapted for OpenShift it keeps everything but runAsUser, runAsGroup and fsGroup (the image runs as
any uid with group 0). */}}
{{- define "kafka-jmx-sidecar.securityContext" -}}
{{- $context := .context }}
{{- if include "kafka-jmx-sidecar.adaptForOpenShift" .root }}
{{- $context = omit $context "runAsUser" "runAsGroup" "fsGroup" }}
{{- end }}
{{- toYaml $context }}
{{- end }}

{{/* http or https: what probes and monitors speak to the metrics port. */}}
{{- define "kafka-jmx-sidecar.scheme" -}}
{{- if and .Values.webConfig.secretName .Values.webConfig.tls }}https{{ else }}http{{ end }}
{{- end }}

{{/* Refuse values that cannot work, naming the value to set. */}}
{{- define "kafka-jmx-sidecar.validate" -}}
{{- if not (has .Values.mode (list "standalone" "cluster" "sidecar")) }}
{{- fail (printf "values: mode: %q is not a mode; set mode to standalone, cluster or sidecar" .Values.mode) }}
{{- end }}
{{- if not .Values.rules.existingConfigMap }}
{{- if eq .Values.mode "cluster" }}
{{- if not .Values.admin.bootstrapServers }}
{{- fail "values: admin.bootstrapServers: the cluster mode reads the Admin API; set admin.bootstrapServers (host:port,...)" }}
{{- end }}
{{- if or .Values.jmx.hostPort .Values.jmx.url }}
{{- fail "values: jmx.hostPort/jmx.url: the cluster mode reads no JMX; leave jmx.hostPort and jmx.url empty" }}
{{- end }}
{{- else if and (not .Values.jmx.hostPort) (not .Values.jmx.url) (not .Values.brokers) }}
{{- fail (printf "values: jmx.hostPort: the %s mode reads a broker over JMX; set jmx.hostPort (host:port) or jmx.url%s" .Values.mode (ternary ", or brokers for several" "" (eq .Values.mode "standalone"))) }}
{{- end }}
{{- end }}
{{- include "kafka-jmx-sidecar.validateBrokers" . }}
{{- with .Values.rules.inline }}
{{- $doc := fromYaml . }}
{{- if hasKey $doc "Error" }}
{{- fail (printf "values: rules.inline: not a YAML mapping (%s); write the rules document (lowercaseOutputName, rules, ...)" $doc.Error) }}
{{- end }}
{{- range $key := list "hostPort" "jmxUrl" "username" "password" "ssl" "sidecar" }}
{{- if hasKey $doc $key }}
{{- fail (printf "values: rules.inline: %s: the chart writes the connection and the sidecar: key; remove %s from rules.inline and use the values jmx.*, admin.*, settings" $key $key) }}
{{- end }}
{{- end }}
{{- end }}
{{- if and .Values.archive.enabled (eq .Values.mode "cluster") }}
{{- fail "values: archive.enabled: the cluster mode does not archive yet; set archive.enabled to false" }}
{{- end }}
{{- /* Refused rather than dropped: an operator who asked for the probe should learn why it is
not there, not find out from a rolling restart that never ends. */}}
{{- if and (eq .Values.mode "sidecar") .Values.readinessProbe.enabled }}
{{- fail "values: readinessProbe.enabled: the sidecar mode puts the container into the BROKER's pod, and /-/ready answers 503 until the first complete poll (a minute or more on a big broker, never while JMX is misconfigured): the broker pod would leave its Service, stall a StatefulSet rolling restart and block node drains behind a PodDisruptionBudget. Remove readinessProbe.enabled (the sidecar mode has no readiness probe; livenessProbe checks the process on /-/healthy)" }}
{{- end }}
{{- end }}

{{/* The readiness probe on /-/ready: on by default in the standalone and cluster modes (a pod of
its own, out of its Service until it has polled), never in the sidecar mode (the broker's pod,
whose readiness must not wait on a poll; the validation above refuses an explicit true). */}}
{{- define "kafka-jmx-sidecar.readinessProbe" -}}
{{- if hasKey .Values.readinessProbe "enabled" }}
{{- if and .Values.readinessProbe.enabled (ne .Values.mode "sidecar") }}true{{ end }}
{{- else if ne .Values.mode "sidecar" }}true{{ end }}
{{- end }}

{{/*
The sidecar container. Include it in a broker pod's containers (with "kafka-jmx-sidecar.volumes"
in its volumes) from a chart that has this chart as a dependency:
  {{ include "kafka-jmx-sidecar.container" (index .Subcharts "kafka-jmx-sidecar") | nindent 8 }}
or use its output as it is rendered into examples/ (Bitnami's `sidecars`, a StatefulSet).
In the sidecar mode it carries no readiness probe: a container's readiness is its pod's, and the
broker's pod must not wait on the sidecar's first poll.
*/}}
{{- define "kafka-jmx-sidecar.container" -}}
- name: kafka-jmx-sidecar
  image: {{ include "kafka-jmx-sidecar.imageRef" (dict "image" .Values.image "appVersion" .Chart.AppVersion) }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  {{- /* the image's ENTRYPOINT is `kafka-jmx-sidecar serve` */}}
  args:
    - --config
    - /etc/kafka-jmx-sidecar/config.yml
    {{- if .Values.webConfig.secretName }}
    - --web.config.file
    - /etc/kafka-jmx-sidecar/web/{{ .Values.webConfig.key }}
    {{- end }}
    {{- with .Values.extraArgs }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- if or .Values.jmx.usernameSecret.name .Values.jmx.passwordSecret.name .Values.jmx.ssl.trustStore.passwordSecret.name .Values.extraEnv }}
  env:
    {{- with .Values.jmx.usernameSecret.name }}
    - name: JMX_USERNAME
      valueFrom:
        secretKeyRef:
          name: {{ . }}
          key: {{ $.Values.jmx.usernameSecret.key }}
    {{- end }}
    {{- with .Values.jmx.passwordSecret.name }}
    - name: JMX_PASSWORD
      valueFrom:
        secretKeyRef:
          name: {{ . }}
          key: {{ $.Values.jmx.passwordSecret.key }}
    {{- end }}
    {{- if and .Values.jmx.ssl.enabled .Values.jmx.ssl.trustStore.passwordSecret.name }}
    - name: TRUSTSTORE_PASSWORD
      valueFrom:
        secretKeyRef:
          name: {{ .Values.jmx.ssl.trustStore.passwordSecret.name }}
          key: {{ .Values.jmx.ssl.trustStore.passwordSecret.key }}
    {{- end }}
    {{- with .Values.extraEnv }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- end }}
  {{- with .Values.extraEnvFrom }}
  envFrom:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  ports:
    - name: metrics
      containerPort: {{ .Values.containerPort }}
      protocol: TCP
  {{- $scheme := include "kafka-jmx-sidecar.scheme" . | upper }}
  {{- /* liveness and startup ask /-/healthy, which the HTTP server answers without JMX or a poll:
  in a broker's pod they may restart the sidecar, never hold the broker back */}}
  {{- if .Values.livenessProbe.enabled }}
  livenessProbe:
    httpGet:
      path: /-/healthy
      port: metrics
      scheme: {{ $scheme }}
    {{- toYaml (omit .Values.livenessProbe "enabled") | nindent 4 }}
  {{- end }}
  {{- if include "kafka-jmx-sidecar.readinessProbe" . }}
  readinessProbe:
    httpGet:
      path: /-/ready
      port: metrics
      scheme: {{ $scheme }}
    {{- toYaml (omit .Values.readinessProbe "enabled") | nindent 4 }}
  {{- end }}
  {{- if .Values.startupProbe.enabled }}
  startupProbe:
    httpGet:
      path: /-/healthy
      port: metrics
      scheme: {{ $scheme }}
    {{- toYaml (omit .Values.startupProbe "enabled") | nindent 4 }}
  {{- end }}
  {{- with .Values.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- include "kafka-jmx-sidecar.securityContext" (dict "root" . "context" .Values.securityContext) | nindent 4 }}
  volumeMounts:
    - name: kafka-jmx-sidecar-config
      mountPath: /etc/kafka-jmx-sidecar/config.yml
      subPath: {{ include "kafka-jmx-sidecar.configMapKey" . }}
      readOnly: true
    - name: kafka-jmx-sidecar-tmp
      mountPath: /tmp
    {{- if .Values.webConfig.secretName }}
    - name: kafka-jmx-sidecar-web
      mountPath: /etc/kafka-jmx-sidecar/web
      readOnly: true
    {{- end }}
    {{- if and .Values.jmx.ssl.enabled .Values.jmx.ssl.trustStore.secretName }}
    - name: kafka-jmx-sidecar-truststore
      mountPath: /etc/kafka-jmx-sidecar/secrets/truststore
      readOnly: true
    {{- end }}
    {{- if .Values.archive.enabled }}
    - name: kafka-jmx-sidecar-archive
      mountPath: /var/lib/kafka-jmx-sidecar
    {{- end }}
    {{- with .Values.extraVolumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end }}

{{/* The volumes the container mounts: a list to append to the pod's volumes. */}}
{{- define "kafka-jmx-sidecar.volumes" -}}
- name: kafka-jmx-sidecar-config
  configMap:
    name: {{ include "kafka-jmx-sidecar.configMapName" . }}
- name: kafka-jmx-sidecar-tmp
  emptyDir:
    sizeLimit: 64Mi
{{- if .Values.webConfig.secretName }}
- name: kafka-jmx-sidecar-web
  secret:
    secretName: {{ .Values.webConfig.secretName }}
{{- end }}
{{- if and .Values.jmx.ssl.enabled .Values.jmx.ssl.trustStore.secretName }}
- name: kafka-jmx-sidecar-truststore
  secret:
    secretName: {{ .Values.jmx.ssl.trustStore.secretName }}
    items:
      - key: {{ .Values.jmx.ssl.trustStore.key }}
        path: {{ .Values.jmx.ssl.trustStore.key }}
{{- end }}
{{- if .Values.archive.enabled }}
- name: kafka-jmx-sidecar-archive
  {{- if .Values.archive.existingClaim }}
  persistentVolumeClaim:
    claimName: {{ .Values.archive.existingClaim }}
  {{- else }}
  emptyDir: {}
  {{- end }}
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Pod annotations for annotation-based scraping (prometheus.io/*). */}}
{{- define "kafka-jmx-sidecar.scrapeAnnotations" -}}
{{- if .Values.scrapeAnnotations.enabled }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .Values.containerPort | quote }}
prometheus.io/path: /metrics
prometheus.io/scheme: {{ include "kafka-jmx-sidecar.scheme" . }}
{{- end }}
{{- end }}
