"""What every stage stands on, and nothing else of the project: it imports only the standard library.

    model.py        the values that flow between stages: ObjectName, MBean, BeanTable, Sample
    families.py     the rule engine's output shapes, as the writers take them: Family, TableSeries
    java_text.py    numbers and values as Java spells and reads them (Double.toString, ...)
    config_file.py  a configuration file read with its lines; ConfigError says file:line: key: what to fix
"""
