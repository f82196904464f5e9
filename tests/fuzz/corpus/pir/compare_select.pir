func @f(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %p = compare(%a, %b) {direction = GT}
  %m = select(%p, %a, %b)
  return %m
}
