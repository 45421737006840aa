//! [`MemLog`]: the [`Log`] contract without files, for tests and model checking.

use super::{Log, LogError, Record};

/// In-memory log. By default every append is immediately durable (there is nothing to crash);
/// [`MemLog::manual_sync`] makes records durable only on [`Log::sync`], and [`MemLog::crash`]
/// then loses the others, as a power cut would.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct MemLog {
    /// Offset of `records[0]`: records below it were trimmed.
    first: u64,
    records: Vec<Vec<u8>>,
    /// Durable records, counted from `first`.
    durable: usize,
    manual: bool,
}

impl MemLog {
    /// An empty log whose appends are durable on return.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty log whose appends become durable only on [`Log::sync`].
    pub fn manual_sync() -> Self {
        MemLog {
            manual: true,
            ..Self::default()
        }
    }

    /// Loses every record that is not durable.
    pub fn crash(&mut self) {
        self.records.truncate(self.durable);
    }
}

impl Log for MemLog {
    fn append_expected(
        &mut self,
        batch: &[&[u8]],
        expected_end: u64,
    ) -> Result<Vec<u64>, LogError> {
        let first = self.end();
        if expected_end != first {
            return Err(LogError::Conflict {
                expected: expected_end,
                actual: first,
            });
        }
        self.records.extend(batch.iter().map(|p| p.to_vec()));
        if !self.manual {
            self.durable = self.records.len();
        }
        Ok((first..first + batch.len() as u64).collect())
    }

    fn read_durable(&self, offset: u64, max: usize) -> Result<Vec<Record>, LogError> {
        if offset < self.first {
            return Err(LogError::Trimmed {
                offset,
                first: self.first,
            });
        }
        let start = usize::try_from(offset - self.first).unwrap_or(usize::MAX);
        Ok(self.records[..self.durable]
            .iter()
            .enumerate()
            .skip(start)
            .take(max)
            .map(|(i, p)| Record {
                offset: self.first + i as u64,
                payload: p.clone(),
            })
            .collect())
    }

    fn first(&self) -> u64 {
        self.first
    }

    fn end(&self) -> u64 {
        self.first + self.records.len() as u64
    }

    fn durable_end(&self) -> u64 {
        self.first + self.durable as u64
    }

    fn sync(&mut self) -> Result<(), LogError> {
        self.durable = self.records.len();
        Ok(())
    }

    fn trim(&mut self, before: u64) -> Result<(), LogError> {
        // Only durable records go: a trim must not make the log shorter than a crash would.
        let cut = before.min(self.durable_end()).saturating_sub(self.first) as usize;
        self.records.drain(..cut);
        self.durable -= cut;
        self.first += cut as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_log_reads_in_offset_order() {
        let mut log = MemLog::new();
        assert_eq!(log.append(&[b"a", b"b"]).unwrap(), vec![0, 1]);
        assert_eq!(log.append(&[b"c"]).unwrap(), vec![2]);
        let got: Vec<_> = log.read_durable(1, 10).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].payload, b"b");
        assert_eq!(got[1].offset, 2);
    }

    #[test]
    fn mem_log_trims_durable_records_only() {
        let mut log = MemLog::manual_sync();
        log.append(&[b"a", b"b", b"c"]).unwrap();
        log.sync().unwrap();
        log.append(&[b"d"]).unwrap();
        log.trim(10).unwrap();
        assert_eq!((log.first(), log.end(), log.durable_end()), (3, 4, 3));
        assert!(matches!(
            log.read_durable(0, 1),
            Err(LogError::Trimmed {
                offset: 0,
                first: 3
            })
        ));
        log.sync().unwrap();
        assert_eq!(log.read_durable(3, 9).unwrap()[0].payload, b"d");
        assert_eq!(log.append(&[b"e"]).unwrap(), vec![4]);
    }
}
