// Filled in by the module's owner; exported here so the package entry is stable.
export {}
