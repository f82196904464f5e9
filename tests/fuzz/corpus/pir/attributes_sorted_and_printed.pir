func @f(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  %d = dot_general(%a, %b) {rhs_contract = [1], lhs_batch = [0], lhs_contract = [2], rhs_batch = [0]}
  return %d
}
