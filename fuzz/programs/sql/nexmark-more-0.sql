INSERT INTO q9
SELECT id, itemName, description, initialBid, reserve, dateTime, expires, seller, category,
       auction, bidder, price, bid_dateTime
FROM (
  SELECT A.*, B.auction, B.bidder, B.price, B.dateTime AS bid_dateTime,
         ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.dateTime ASC) AS rownum
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
)
WHERE rownum <= 1
