INSERT INTO q20
SELECT auction, bidder, price, channel, url, B.dateTime, B.extra,
       itemName, description, initialBid, reserve, A.dateTime, expires, seller, category
FROM bid AS B INNER JOIN auction AS A ON B.auction = A.id
WHERE A.category = 10
