"""`provider-kserve generate`: definition/ and the parameter models into the Provider spec, the
chart's schema and RBAC rules, and the checks that they agree."""
