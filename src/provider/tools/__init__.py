"""What runs outside the controller: the definition and the files generated from it, the RBAC rules,
`render`'s preview, `inspect`'s inventory and `doctor`'s checks of a cluster."""
