a = !true || 1 + 2 * 3 % 4 >= -5 && "s" != null ? f(x...) : provider::aws::arn_parse("a\n\u00e9")["k"]
b = [for x in y : x.*.id]
c = { "k" : 1, (var.k) = 2 }
d = a.0.1
