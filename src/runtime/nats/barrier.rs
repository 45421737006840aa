//! barrier
