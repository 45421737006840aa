INSERT INTO q4
SELECT A.id, A.category, MAX(B.price) AS final
FROM auction AS A JOIN bid AS B ON A.id = B.auction
WHERE B.dateTime BETWEEN A.dateTime AND A.expires
GROUP BY A.id, A.category
