"""Input hygiene: PII redaction before anything is embedded or stored."""
