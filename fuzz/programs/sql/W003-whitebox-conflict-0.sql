INSERT INTO counts
SELECT word, COUNT(*) AS n FROM words GROUP BY word
