-- awrf's target distribution over the genres of item_genres (normalized by the statement)
select genre, cast(weight as double precision) as weight
from (values ('g0', 1.0), ('g1', 2.0), ('g2', 1.0), ('g3', 0.5)) as t (genre, weight)
