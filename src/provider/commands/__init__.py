"""One module per `provider-kserve` verb (each reaches the API server with the runtime's
`add_connection_arguments`)."""
