package store

// PlanItemsByLocatorSQL is the look-up whose plan TestLookupByLocatorAfterAnalyze explains.
const PlanItemsByLocatorSQL = planItemsByLocatorSQL
