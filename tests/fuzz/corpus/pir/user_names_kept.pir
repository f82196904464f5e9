func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %sum = add(%a, %b)  // comment after a statement
  %5 = mul(%sum, %sum)
  %prod.2 = max(%5, %a)
  return %prod.2
}
