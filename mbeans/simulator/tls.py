"""Key and trust stores for JMX over SSL, made with the JDK's keytool (for tests and demos).

    files = generate("/tmp/jmx-tls")          # keystore.p12, truststore.p12, simulator.crt
    Simulator.start(..., security=JmxSecurity(ssl=True, keystore=files.keystore,
                                              keystore_password=files.password))
    # the client JVM: -Djavax.net.ssl.trustStore=files.truststore -Djavax.net.ssl.trustStorePassword=...

The certificate is self-signed for CN=127.0.0.1 with subjectAltName IP:127.0.0.1, the address
every simulator endpoint listens on and names in its RMI stubs.
"""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kafka_jmx_sidecar.mbeans.simulator.control import SimulatorError


@dataclass(frozen=True)
class TlsFiles:
    keystore: str
    truststore: str
    certificate: str
    password: str


def find_keytool() -> str:
    from kafka_jmx_sidecar.mbeans.simulator.jdk import find_java

    keytool = Path(find_java()).parent / "keytool"
    if keytool.exists():
        return str(keytool)
    found = shutil.which("keytool")
    if not found:
        raise SimulatorError("keytool not found; it comes with the JDK (apt-get install openjdk-17-jdk-headless)")
    return found


def generate(directory: str | Path, password: str = "simulator-secret", *, alias: str = "simulator",
             validity_days: int = 3650) -> TlsFiles:
    """Create (or overwrite) keystore.p12, truststore.p12 and simulator.crt in `directory`."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    ks, ts, crt = d / "keystore.p12", d / "truststore.p12", d / "simulator.crt"
    for f in (ks, ts, crt):
        f.unlink(missing_ok=True)
    keytool = find_keytool()
    steps = [
        [keytool, "-genkeypair", "-alias", alias, "-keyalg", "RSA", "-keysize", "2048",
         "-dname", "CN=127.0.0.1, OU=kafka-jmx-sidecar simulator", "-ext", "san=ip:127.0.0.1",
         "-validity", str(validity_days), "-storetype", "PKCS12", "-keystore", str(ks),
         "-storepass", password, "-keypass", password],
        [keytool, "-exportcert", "-rfc", "-alias", alias, "-keystore", str(ks), "-storepass", password,
         "-file", str(crt)],
        [keytool, "-importcert", "-noprompt", "-alias", alias, "-file", str(crt), "-storetype", "PKCS12",
         "-keystore", str(ts), "-storepass", password],
    ]
    for cmd in steps:
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise SimulatorError(f"keytool {cmd[1]} failed: {(r.stderr or r.stdout).strip()}")
    return TlsFiles(str(ks), str(ts), str(crt), password)
