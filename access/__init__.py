"""Who may do what: API keys and their projects (tenants), approvers, the egress guard for
outbound connections, and per-key limits."""
