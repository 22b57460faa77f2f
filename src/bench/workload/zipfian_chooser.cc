#include "farmem/bench/workload/zipfian_chooser.h"

#include <cassert>
#include <cmath>

namespace farmem::bench::workload {
namespace {

// Up to this many terms are summed one by one; beyond, Euler-Maclaurin takes over. At x >= 1024
// the first omitted Euler-Maclaurin term is below 1e-25 of the sum.
constexpr uint64_t kExactTerms = 1024;

double direct_sum(uint64_t from, uint64_t to, double theta) {
  // Smallest terms first, for accuracy.
  double sum = 0.0;
  for (uint64_t i = to; i > from; --i) sum += std::pow(static_cast<double>(i), -theta);
  return sum;
}

// sum_{i=a}^{b} i^-s for 1024 <= a <= b by Euler-Maclaurin with Bernoulli terms up to B6.
double euler_maclaurin(uint64_t a, uint64_t b, double s) {
  const double da = static_cast<double>(a);
  const double db = static_cast<double>(b);
  // Integral of x^-s over [a, b]: a^(1-s) * expm1((1-s) ln(b/a)) / (1-s), without cancellation.
  const double log_ratio = std::log1p(static_cast<double>(b - a) / da);
  const double integral = std::pow(da, 1.0 - s) * std::expm1((1.0 - s) * log_ratio) / (1.0 - s);
  auto f = [s](double x) { return std::pow(x, -s); };
  // d1(x) = f'(x), d3 = f'''(x), d5 = f^(5)(x).
  auto d1 = [s](double x) { return -s * std::pow(x, -s - 1.0); };
  auto d3 = [s](double x) { return -s * (s + 1) * (s + 2) * std::pow(x, -s - 3.0); };
  auto d5 = [s](double x) {
    return -s * (s + 1) * (s + 2) * (s + 3) * (s + 4) * std::pow(x, -s - 5.0);
  };
  return integral + (f(da) + f(db)) / 2.0 + (d1(db) - d1(da)) / 12.0 - (d3(db) - d3(da)) / 720.0 +
         (d5(db) - d5(da)) / 30240.0;
}

double sanitize_theta(double theta) {
  const bool valid = theta > 0.0 && theta < 1.0;
  assert(valid && "zipfian theta must lie in (0, 1)");
  return valid ? theta : kDefaultZipfTheta;
}

}  // namespace

double zeta_between(uint64_t from, uint64_t to, double theta) {
  if (to <= from) return 0.0;
  if (to - from <= kExactTerms) return direct_sum(from, to, theta);
  double sum = 0.0;
  uint64_t a = from;
  if (a < kExactTerms) {
    sum = direct_sum(a, kExactTerms, theta);
    a = kExactTerms;
  }
  // sum_{i=a+1}^{to} = sum_{i=a}^{to} - a^-theta.
  return sum + (euler_maclaurin(a, to, theta) - std::pow(static_cast<double>(a), -theta));
}

double zeta(uint64_t n, double theta) { return zeta_between(0, n, theta); }

ZipfianChooser::ZipfianChooser(uint64_t n, double theta)
    : n_(n == 0 ? 1 : n), theta_(sanitize_theta(theta)) {
  assert(n > 0 && "zipfian item count must be positive");
  alpha_ = 1.0 / (1.0 - theta_);
  half_pow_theta_ = std::pow(0.5, theta_);
  zetan_ = zeta(n_, theta_);
  update_eta();
}

void ZipfianChooser::set_item_count(uint64_t n) {
  if (n == 0) n = 1;
  if (n > n_) {
    zetan_ += zeta_between(n_, n, theta_);
  } else if (n < n_) {
    zetan_ = zeta(n, theta_);
  }
  n_ = n;
  update_eta();
}

void ZipfianChooser::update_eta() {
  // With n <= 2 every draw ends in the two exact branches of next(); eta is never used.
  if (n_ <= 2) {
    eta_ = 0.0;
    return;
  }
  const double zeta2 = 1.0 + half_pow_theta_;
  eta_ = (1.0 - std::pow(2.0 / static_cast<double>(n_), 1.0 - theta_)) / (1.0 - zeta2 / zetan_);
}

double ZipfianChooser::probability(uint64_t rank) const {
  if (rank >= n_) return 0.0;
  return std::pow(static_cast<double>(rank) + 1.0, -theta_) / zetan_;
}

double ZipfianChooser::generated_mass_below(uint64_t k) const {
  if (k == 0) return 0.0;
  if (k >= n_) return 1.0;
  if (k == 1) return 1.0 / zetan_;
  // next() returns < k (k >= 2) iff n * (eta*u - eta + 1)^alpha < k, i.e.
  // u < 1 - (1 - (k/n)^(1-theta)) / eta.
  const double ratio = static_cast<double>(k) / static_cast<double>(n_);
  return 1.0 - (1.0 - std::pow(ratio, 1.0 - theta_)) / eta_;
}

}  // namespace farmem::bench::workload
