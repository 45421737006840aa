INSERT INTO q1
SELECT auction, bidder, 0.908 * price AS price, dateTime FROM bid
