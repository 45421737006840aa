//! "Did you mean": the closest of a few names to a misspelt one, for unknown fields and
//! endpoints, and for `blazes explain` and `blazes man` queries.

/// Edit distance for "did you mean" (optimal string alignment: a swap of two neighbours costs
/// one, because `pahts` is a typo of `paths`). Case-insensitive; small inputs only.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().map(|c| c.to_ascii_lowercase()).collect();
    let b: Vec<char> = b.chars().map(|c| c.to_ascii_lowercase()).collect();
    // Three rolling rows (the swap looks two rows back) instead of the whole matrix: "did you
    // mean" runs this for every candidate name.
    let mut prev2 = vec![0usize; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0usize; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j - 1] + cost).min(prev[j] + 1).min(cur[j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                cur[j] = cur[j].min(prev2[j - 2] + 1);
            }
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The closest candidate within a third of the word's length (at least 1, at most 3 edits).
/// Words longer than 64 characters get no suggestion, and candidates whose length alone rules
/// them out are not compared: the edit distance is quadratic in the lengths, and names in a
/// hostile spec can be megabytes long.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let len = word.chars().count();
    if len > 64 {
        return None;
    }
    let limit = (len / 3).clamp(1, 3);
    candidates
        .into_iter()
        .filter(|c| c.len() <= 4 * (len + limit) && c.chars().count().abs_diff(len) <= limit)
        .map(|c| (edit_distance(word, c), c))
        .filter(|&(d, _)| d <= limit)
        .min()
        .map(|(_, c)| c)
}
