INSERT INTO out
SELECT user_id FROM clicks WHERE url = 'http://
