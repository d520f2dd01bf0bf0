"""kafka-jmx-sidecar's installed name. The code stays in the folders at the top of the checkout and
installs beneath this one package (pyproject.toml maps them), so no other package called exporter,
mbeans or rules in an environment can collide with it:

    kafka_jmx_sidecar.mbeans    mbeans/    what Kafka's MBeans are and mean (pure)
    kafka_jmx_sidecar.exporter  exporter/  how they leave: the stages from the JMX read to the CLI
    kafka_jmx_sidecar.rules     rules/     the shipped rule files
"""
