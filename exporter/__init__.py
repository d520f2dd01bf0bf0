"""How metrics leave: JMX client, rule engine, poll loop, HTTP endpoint, CLI."""
__version__ = "0.1.0"
