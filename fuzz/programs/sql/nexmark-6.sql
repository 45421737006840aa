CREATE VIEW P AS
  SELECT id, name, window_start, window_end
  FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY id, name, window_start, window_end;
CREATE VIEW A AS
  SELECT seller, window_start, window_end
  FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY seller, window_start, window_end;
INSERT INTO q8
SELECT P.id, P.name, P.window_start
FROM P JOIN A ON P.id = A.seller AND P.window_start = A.window_start AND P.window_end = A.window_end
