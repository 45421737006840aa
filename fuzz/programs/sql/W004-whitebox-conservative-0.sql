INSERT INTO long_words
SELECT word FROM words WHERE CHAR_LENGTH(word) > 5
