//! blazes: coordination analysis for dataflows.
